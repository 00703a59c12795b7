#!/usr/bin/env python3
"""Browser sign-in through auth-gateway in a real headless browser.

Debian's `chromium`, driven through `chromium-driver` by Python `selenium`, walks one flow of
docs/browser-sign-in.md against a running gateway and the demo's OpenID Provider (Glewlwyd in
the glewlwyd flow), and prints what it saw as one JSON object on stdout; the Swift tests
(RealBrowserTests) judge it.

    browser_sign_in.py --gateway http://localhost:PORT --flow sign-in|two-tabs|sign-out|demo|live|glewlwyd
                       [--page /path?query] [--user NAME --password SECRET]
                       [--chromium PATH] [--chromedriver PATH] [--timeout S]

Flows:
  sign-in   open --page (a signIn route), land on the provider's login form, sign in as alice,
            end on --page showing the echo backend's answer;
  two-tabs  open two protected pages in two tabs before signing in on either, then submit the
            login form in each (the second tab first): each tab ends on its own page;
  sign-out  sign in; a cross-site form post to sign-out (from the provider's origin) changes
            nothing; a same-origin form post to sign-out ends on the login form (the provider's
            session ended too); sign in again; a typed GET of sign-out does the same;
  demo      the walk-through `auth-gateway demo` prints: open --page (a full URL), sign in,
            then sign out by typing {gateway}/.gateway/sign-out;
  live      the demo's live page (a full URL as --page): sign in from it, wait until its WebSocket
            is open and ticking, click its sign-out link (a new tab), and read on the page the
            close code the tunnel got (docs/streams.md, "The demo");
  glewlwyd  the provider is Glewlwyd: open --page, land on Glewlwyd's login page, log in as
            --user, grant the scopes asked, continue, end on --page; then sign out by typing
            {gateway}/.gateway/sign-out, land on Glewlwyd's end-session prompt, log out there,
            and open --page again: Glewlwyd's login page asks for a user name again.

Every wait is bounded (--timeout per step), and the whole run by an alarm (--deadline) after
which the browser is closed and the script exits 1. Exit status: 0 the flow ran (its
observations are on stdout, judged by the caller); 1 a step did not happen (stdout: a JSON
object with "error", the step, and where the browser was); 3 chromium, chromedriver or
selenium is missing (stderr: how to install it).
"""

import argparse
import json
import os
import shutil
import signal
import sys
import time
import traceback
import urllib.parse

USER = "alice@example.com"
PASSWORD = "alice-password"


def missing(message):
    sys.stderr.write(message + " (or run .ci/run, which installs it)\n")
    sys.exit(3)


try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    missing("Python selenium is not installed: pip install selenium")


class StepFailed(Exception):
    def __init__(self, step, detail=""):
        super().__init__(step)
        self.step = step
        self.detail = detail


class Deadline(Exception):
    pass


class Browser:
    """One headless Chromium with the waits and readings the flows share."""

    def __init__(self, args):
        self.gateway = args.gateway.rstrip("/")
        self.timeout = args.timeout
        options = webdriver.ChromeOptions()
        options.binary_location = args.chromium
        # Debian's chromium runs as root only without its sandbox; /dev/shm is small in containers.
        for flag in [
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            # No GPU process on a server without one; fewer processes on a shared machine.
            "--disable-gpu",
            "--no-proxy-server",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--window-size=1200,900",
        ]:
            options.add_argument(flag)
        service = Service(executable_path=args.chromedriver)
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_page_load_timeout(self.timeout)
        self.driver.set_script_timeout(self.timeout)

    def quit(self):
        try:
            self.driver.quit()
        except Exception:
            pass

    def wait(self, step, condition):
        """Polls `condition(driver)` until it is truthy, for at most the step timeout."""
        try:
            return WebDriverWait(self.driver, self.timeout, poll_frequency=0.1).until(
                lambda driver: self.safely(condition)
            )
        except TimeoutException:
            raise StepFailed(step, "timed out after %ss" % self.timeout)

    def safely(self, condition):
        # A page in the middle of navigating may lose its elements under our feet.
        try:
            return condition(self.driver)
        except WebDriverException:
            return False

    def open(self, url):
        try:
            self.driver.get(url)
        except TimeoutException:
            raise StepFailed("open " + url, "the page did not load within %ss" % self.timeout)

    @property
    def url(self):
        return self.driver.current_url

    def elements(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def on_login_form(self):
        """Whether the provider's login form is showing (a page of another origin than the gateway's)."""
        url = self.url
        return (
            not url.startswith(self.gateway + "/")
            and urllib.parse.urlsplit(url).path.endswith("/authorize")
            and bool(self.elements("#username"))
            and bool(self.elements("#sign-in"))
        )

    def on_signed_out_page(self):
        return bool(self.elements("#signed-out"))

    def login_form(self, step):
        """Waits for the login form; what its URL asked of the provider."""
        self.wait(step, lambda _: self.on_login_form())
        url = self.url
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        return {"url": url, "query": query, "status": self.navigation_status()}

    def submit_credentials(self, user=USER, password=PASSWORD):
        name = self.driver.find_element(By.ID, "username")
        name.clear()
        name.send_keys(user)
        self.driver.find_element(By.ID, "password").send_keys(password)
        self.driver.find_element(By.ID, "sign-in").click()

    def echo(self):
        """The echo backend's JSON answer this page shows (Chromium wraps JSON in a <pre>)."""
        text = self.driver.execute_script(
            """
            for (const pre of document.querySelectorAll('pre')) {
              try { JSON.parse(pre.textContent); return pre.textContent; } catch (e) {}
            }
            return document.body ? document.body.textContent : '';
            """
        )
        try:
            return json.loads(text)
        except ValueError:
            return None

    def navigation_status(self):
        """The HTTP status of the document showing (after every redirect)."""
        return self.driver.execute_script(
            "const e = performance.getEntriesByType('navigation')[0]; return e ? e.responseStatus : null;"
        )

    def landed(self, step, url):
        """Waits until the browser shows `url` with the echo backend's answer; what it shows."""
        self.wait(step, lambda _: self.url == url and self.echo() is not None)
        return {
            "url": self.url,
            "status": self.navigation_status(),
            "echo": self.echo(),
            "documentCookie": self.driver.execute_script("return document.cookie;"),
            "cookies": self.cookies(),
        }

    def cookies(self):
        """Every cookie the browser holds (all sites), flags and value length, not values."""
        found = self.driver.execute_cdp_cmd("Network.getAllCookies", {}).get("cookies", [])
        return sorted(
            (
                {
                    "name": c["name"],
                    "domain": c["domain"],
                    "path": c.get("path"),
                    "httpOnly": c.get("httpOnly", False),
                    "secure": c.get("secure", False),
                    "sameSite": c.get("sameSite"),
                    "session": c.get("session", False),
                    "valueLength": len(c.get("value", "")),
                }
                for c in found
            ),
            key=lambda c: (c["domain"], c["name"]),
        )

    def post_form(self, action):
        """Submits an empty POST form to `action` from the page showing (a top-level navigation)."""
        self.driver.execute_script(
            """
            const form = document.createElement('form');
            form.method = 'post';
            form.action = arguments[0];
            document.body.appendChild(form);
            form.submit();
            """,
            action,
        )

    def where(self):
        """Where the browser is (once the page showing has loaded), for a report."""
        try:
            self.wait("the page loads", lambda driver: driver.execute_script("return document.readyState") == "complete")
        except StepFailed:
            pass
        try:
            text = self.driver.execute_script("return document.body ? document.body.innerText : '';")
        except WebDriverException:
            text = None
        try:
            status = self.navigation_status()
        except WebDriverException:
            status = None
        return {"url": self.url, "status": status, "text": (text or "")[:2000]}


def sign_in(browser, url, step):
    """From a navigation to `url` (not signed in) through the login form back to `url`."""
    browser.open(url)
    login = browser.login_form(step + ": the login form")
    browser.submit_credentials()
    return {"login": login, "landed": browser.landed(step + ": back at the page", url)}


def after_sign_out(browser, step, post_sign_out_url):
    """Waits until a sign-out ended: on the login form, the provider's signed-out page, or at
    the post-sign-out path; where it ended."""
    browser.wait(
        step,
        lambda _: browser.on_login_form()
        or browser.on_signed_out_page()
        or (post_sign_out_url is not None and browser.url == post_sign_out_url),
    )
    return {
        "url": browser.url,
        "status": browser.navigation_status(),
        "onLoginForm": browser.on_login_form(),
        "onSignedOutPage": browser.on_signed_out_page(),
        "cookies": browser.cookies(),
    }


def flow_sign_in(browser, args):
    return sign_in(browser, browser.gateway + args.page, "sign-in")


def flow_two_tabs(browser, args):
    pages = [browser.gateway + "/tab/one?n=1", browser.gateway + "/tab/two?n=2"]
    handles, logins = [], []
    for index, page in enumerate(pages):
        if index > 0:
            browser.driver.switch_to.new_window("tab")
        handles.append(browser.driver.current_window_handle)
        browser.open(page)
        logins.append(browser.login_form("tab %d: the login form" % index))
    flow_cookies = [c for c in browser.cookies() if c["name"].startswith("gateway-flow-")]
    landed = [None, None]
    # The tab that started last signs in first.
    for index in [1, 0]:
        browser.driver.switch_to.window(handles[index])
        browser.wait("tab %d: its login form is still there" % index, lambda _: browser.on_login_form())
        browser.submit_credentials()
        landed[index] = browser.landed("tab %d: back at its page" % index, pages[index])
    # Both tabs still show their own page.
    still = []
    for index in [0, 1]:
        browser.driver.switch_to.window(handles[index])
        still.append(browser.url)
    return {
        "tabs": [{"page": pages[i], "login": logins[i], "landed": landed[i]} for i in [0, 1]],
        "flowCookiesBeforeSignIn": flow_cookies,
        "finalURLs": still,
    }


def flow_sign_out(browser, args):
    page = browser.gateway + args.page
    post_sign_out = browser.gateway + args.post_sign_out_path
    report = {"signedIn": sign_in(browser, page, "sign-in")["landed"]}

    # A form on another site (the provider's origin) posting to sign-out: refused, and the
    # SameSite=Lax cookie does not even go along; the session lives on.
    browser.open(args.provider.rstrip("/") + "/.well-known/openid-configuration")
    browser.post_form(browser.gateway + "/.gateway/sign-out")
    browser.wait("cross-site sign-out: the answer", lambda _: browser.url == browser.gateway + "/.gateway/sign-out")
    cross = browser.where()
    browser.open(page)
    cross["afterwards"] = browser.landed("cross-site sign-out: still signed in", page)
    report["crossSite"] = cross

    # The site's own sign-out button: a same-origin form post.
    browser.post_form("/.gateway/sign-out")
    report["postSignOut"] = after_sign_out(browser, "sign-out by POST: where it ends", post_sign_out)
    browser.open(page)
    report["afterPostSignOut"] = browser.login_form("after the POST sign-out: the page asks to sign in again")

    # Signed in again, then sign-out typed in the address bar (Sec-Fetch-Site: none).
    browser.submit_credentials()
    report["signedInAgain"] = browser.landed("signed in again", page)
    browser.open(browser.gateway + "/.gateway/sign-out")
    report["getSignOut"] = after_sign_out(browser, "sign-out by GET: where it ends", post_sign_out)
    browser.open(page)
    report["afterGetSignOut"] = browser.login_form("after the GET sign-out: the page asks to sign in again")
    return report


def flow_demo(browser, args):
    page = args.page
    report = sign_in(browser, page, "demo sign-in")
    browser.open(browser.gateway + "/.gateway/sign-out")
    report["signOut"] = after_sign_out(browser, "demo sign-out: where it ends", None)
    browser.open(page)
    report["afterSignOut"] = browser.login_form("after the demo's sign-out: the page asks to sign in again")
    return report


def flow_live(browser, args):
    """The demo's live page (docs/streams.md, "The demo"): sign in from it, see its WebSocket
    tick, click its sign-out link (it opens a new tab), and read on the page how the tunnel
    closed and how long after the click."""
    page = args.page
    browser.open(page)
    login = browser.login_form("live: the login form")
    browser.submit_credentials()
    browser.wait("live: back at the page", lambda _: browser.url == page and browser.elements("#status"))
    browser.wait(
        "live: the tunnel is open and ticks",
        lambda _: browser.elements("#ticks li") and browser.elements("#status")[0].text == "open",
    )
    ticks = len(browser.elements("#ticks li"))
    page_window = browser.driver.current_window_handle
    clicked = time.monotonic()
    # A real click (a user gesture, so the new tab is not blocked as a pop-up).
    browser.driver.find_element(By.ID, "sign-out").click()
    browser.wait(
        "live: the tunnel is closed",
        lambda _: browser.elements("#status")[0].get_attribute("data-code"),
    )
    closed_after = time.monotonic() - clicked
    status = browser.elements("#status")[0]
    tabs = len(browser.driver.window_handles)
    browser.driver.switch_to.window(page_window)
    return {
        "login": login,
        "ticks": ticks,
        "status": status.text,
        "code": status.get_attribute("data-code"),
        "closedAfterSeconds": round(closed_after, 3),
        "tabs": tabs,
    }


def on_glewlwyd_page(browser):
    """Whether Glewlwyd's login page (a page of another origin than the gateway's) has loaded."""
    url = browser.url
    return (
        not url.startswith(browser.gateway + "/")
        and urllib.parse.urlsplit(url).path.endswith("/login.html")
        and browser.driver.execute_script("return document.readyState") == "complete"
    )


def glewlwyd_page(browser):
    """The login page's URL, its query, and the authorization request its `callback_url` holds."""
    url = browser.url
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    callback = query.get("callback_url", "")
    authorize = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))
    return {"url": url, "status": browser.navigation_status(), "query": query, "authorize": authorize}


def click(browser, element):
    # The login page shows its steps in a carousel: a button may be in the page but not yet
    # visible to selenium's own click.
    browser.driver.execute_script("arguments[0].click();", element)


def flow_glewlwyd(browser, args):
    page = browser.gateway + args.page
    report = {}
    browser.open(page)
    browser.wait(
        "glewlwyd: its login form",
        lambda _: on_glewlwyd_page(browser)
        and any(e.is_enabled() for e in browser.elements("#username"))
        and browser.elements("#loginbut"),
    )
    report["login"] = glewlwyd_page(browser)
    name = browser.driver.find_element(By.ID, "username")
    name.clear()
    name.send_keys(args.user)
    browser.driver.find_element(By.ID, "password").send_keys(args.password)
    browser.driver.find_element(By.ID, "loginbut").click()

    # Logged in, the page asks to grant the client the scopes (one checkbox each, id
    # grant-<scope>), then offers to continue to the client.
    browser.wait("glewlwyd: the scopes to grant", lambda _: browser.elements("input[id^='grant-']"))
    report["grantable"] = sorted(e.get_attribute("id")[len("grant-"):] for e in browser.elements("input[id^='grant-']"))
    for box in browser.elements("input[id^='grant-']"):
        if box.is_enabled() and not box.is_selected():
            click(browser, box)
    grant = browser.wait(
        "glewlwyd: the grant button",
        lambda driver: driver.find_elements(By.XPATH, "//button[normalize-space(.)='Grant access']"),
    )
    click(browser, grant[0])
    proceed = browser.wait(
        "glewlwyd: the continue button", lambda _: browser.elements("button[title='Continue to client application']")
    )
    click(browser, proceed[0])
    report["landed"] = browser.landed("glewlwyd: back at the page", page)

    # Sign-out typed in the address bar: the gateway's session ends, and Glewlwyd's
    # end-session prompt asks whether to end Glewlwyd's session too.
    browser.open(browser.gateway + "/.gateway/sign-out")
    browser.wait(
        "glewlwyd: the end-session prompt",
        lambda _: on_glewlwyd_page(browser)
        and "prompt=end_session" in browser.url
        and browser.elements("button.btn-danger:not(.dropdown-toggle)"),
    )
    report["endSession"] = glewlwyd_page(browser)
    # The button shows at once, but works only once the page has read the session's clients
    # (GET /api/<plugin>/session/<sid>/<client_id>); before that a click breaks the page.
    query = report["endSession"]["query"]
    session_list = "/%s/session/%s/%s" % (query.get("plugin"), query.get("sid"), query.get("client_id"))
    browser.wait(
        "glewlwyd: the end-session page reads the session",
        lambda driver: driver.execute_script(
            "return performance.getEntriesByType('resource')"
            ".some(e => e.name.includes(arguments[0]) && e.responseEnd > 0);",
            session_list,
        ),
    )
    click(browser, browser.elements("button.btn-danger:not(.dropdown-toggle)")[0])
    # Ending it deletes the OpenID session (Glewlwyd then sends its back-channel logout
    # tokens) and then the login session, whose cookie goes.
    browser.wait(
        "glewlwyd: its login session ends",
        lambda _: not any(c["name"] == "GLEWLWYD2_SESSION_ID" and c["valueLength"] > 0 for c in browser.cookies()),
    )
    report["afterEndSession"] = browser.where()
    browser.open(page)
    browser.wait(
        "glewlwyd: the login form again",
        lambda _: on_glewlwyd_page(browser) and any(e.is_enabled() for e in browser.elements("#username")),
    )
    report["afterSignOut"] = glewlwyd_page(browser)
    return report


FLOWS = {
    "sign-in": flow_sign_in,
    "two-tabs": flow_two_tabs,
    "sign-out": flow_sign_out,
    "demo": flow_demo,
    "live": flow_live,
    "glewlwyd": flow_glewlwyd,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gateway", required=True, help="the gateway's publicBaseURL")
    parser.add_argument("--provider", default="", help="the OpenID Provider's issuer (sign-out's cross-site page)")
    parser.add_argument("--flow", required=True, choices=sorted(FLOWS))
    parser.add_argument("--page", default="/some/page?x=1", help="the protected page (a path; demo: a URL)")
    parser.add_argument("--post-sign-out-path", default="/")
    parser.add_argument("--user", default=USER, help="the user who signs in")
    parser.add_argument("--password", default=PASSWORD, help="that user's password")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "")
    parser.add_argument("--chromedriver", default=shutil.which("chromedriver") or "")
    parser.add_argument("--timeout", type=float, default=60, help="seconds each step may take")
    parser.add_argument("--deadline", type=int, default=240, help="seconds the whole run may take")
    args = parser.parse_args()
    if not args.chromium or not os.access(args.chromium, os.X_OK):
        missing("chromium is not installed: apt-get install -y chromium")
    if not args.chromedriver or not os.access(args.chromedriver, os.X_OK):
        missing("chromedriver is not installed: apt-get install -y chromium-driver")

    # Chromium and its driver join this process group, so whoever has to kill a run that hung
    # can kill them all with it.
    try:
        os.setpgrp()
    except OSError:
        pass

    def expire(signum, frame):
        raise Deadline()

    signal.signal(signal.SIGALRM, expire)
    signal.alarm(args.deadline)
    browser = None
    try:
        # On a loaded machine the driver or the browser may start too slowly for selenium's
        # own waits (about 35 s for the driver, 60 s for the browser): try again, within the
        # deadline.
        for attempt in range(3):
            try:
                browser = Browser(args)
                break
            except WebDriverException as error:
                if attempt == 2:
                    raise StepFailed("start chromium through chromedriver", str(error))
        report = FLOWS[args.flow](browser, args)
        report["flow"] = args.flow
        print(json.dumps(report))
        return 0
    except StepFailed as failure:
        try:
            where = browser.where() if browser else {}
        except Deadline:
            where = {}
        print(json.dumps({"flow": args.flow, "error": failure.step, "detail": failure.detail, "where": where}))
        return 1
    except Deadline:
        # Not asking the browser where it is: it may be what hangs.
        print(json.dumps({"flow": args.flow, "error": "the run took longer than %ss" % args.deadline}))
        return 1
    except Exception as error:
        print(json.dumps({"flow": args.flow, "error": repr(error), "detail": traceback.format_exc()}))
        return 1
    finally:
        signal.alarm(0)
        if browser:
            browser.quit()


if __name__ == "__main__":
    sys.exit(main())
