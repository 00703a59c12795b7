/// Gives the C allocator's free pages back to the system after a (re)load. Parsing a large keys
/// file (docs/policies.md, "API keys") frees far more than it keeps, and glibc keeps freed pages
/// mapped, counted in the process's resident memory, until told otherwise.
enum FreedMemory {
    static func returnToSystem() {
        #if os(Linux) && canImport(Glibc)
        _ = glibcMallocTrim(0)
        #endif
    }
}

#if os(Linux) && canImport(Glibc)
/// glibc's `int malloc_trim(size_t pad)`, declared in `<malloc.h>`, which the Glibc module does
/// not export.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
#endif
