#!/usr/bin/env python3
"""Signs alice in through a gateway with browserSignIn in front of the demo's provider, as a
browser would (navigation, the provider's login form, the callback), and prints two lines:
the session cookie header and the bearer token the backend received for that session.

Usage: demo_sign_in.py http://127.0.0.1:18090/app/   (the gateway's address for a signIn route)
Only for benchmarks on loopback (scripts/bench/session.sh): it prints secrets of a throwaway
demo session."""
import http.client
import json
import sys
import urllib.parse
from html.parser import HTMLParser


class FormFields(HTMLParser):
    def __init__(self):
        super().__init__()
        self.fields, self.action = {}, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.action = attrs.get("action")
        if tag == "input" and attrs.get("type") == "hidden":
            self.fields[attrs["name"]] = attrs.get("value", "")


def request(url, method="GET", headers=None, body=None):
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    target = parts.path + ("?" + parts.query if parts.query else "")
    connection.request(method, target, body=body, headers=headers or {})
    response = connection.getresponse()
    payload = response.read().decode()
    connection.close()
    return response.status, response.headers, payload


def absorb(jar, headers):
    for value in headers.get_all("Set-Cookie") or []:
        name, _, rest = value.split(";")[0].partition("=")
        jar[name.strip()] = rest


def cookie_header(jar):
    return "; ".join(f"{name}={value}" for name, value in sorted(jar.items()) if value)


def main():
    start = sys.argv[1]
    origin = urllib.parse.urlsplit(start)
    browser = {"Accept": "text/html", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none"}
    jar = {}
    status, headers, _ = request(start, headers=browser)
    assert status == 302, f"navigation: {status}"
    absorb(jar, headers)
    authorize = headers["Location"]
    status, _, page = request(authorize, headers=browser)
    assert status == 200, f"authorize: {status}"
    form = FormFields()
    form.feed(page)
    fields = dict(form.fields, username="alice@example.com", password="alice-password", action="sign-in")
    action = urllib.parse.urljoin(authorize, form.action or urllib.parse.urlsplit(authorize).path)
    status, headers, _ = request(
        action, "POST", {"Content-Type": "application/x-www-form-urlencoded"}, urllib.parse.urlencode(fields))
    assert status in (302, 303), f"login form: {status}"
    callback = urllib.parse.urlsplit(headers["Location"])
    target = f"http://{origin.hostname}:{origin.port}{callback.path}?{callback.query}"
    status, headers, _ = request(target, headers=dict(browser, Cookie=cookie_header(jar)))
    assert status == 302, f"callback: {status}"
    absorb(jar, headers)
    session = {name: value for name, value in jar.items() if "session" in name and value}
    assert session, "no session cookie"
    cookie = cookie_header(session)
    status, _, echoed = request(start, headers={"Accept": "application/json", "Cookie": cookie})
    assert status == 200, f"session request: {status}"
    bearer = json.loads(echoed)["headers"]["authorization"][0].split(" ", 1)[1]
    print(cookie)
    print(bearer)


if __name__ == "__main__":
    main()
