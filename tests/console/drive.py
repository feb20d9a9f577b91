"""Drives the web console in headless Chromium (Debian's package, through Playwright for Python)
as a person would, against a running ctxgate host, and checks what it shows against the API's
own JSON. Run by tests/api/console.rs against `ctxgate serve` and the Worker under workerd.

    drive.py --base URL --key KEY --project NAME --commit SHA --remote-web URL
             --rate-limit N --shots DIR --tag native|worker [--reindex-refused CODE]

Steps: sign in (a wrong key first), run a query in the inspector and compare every number of
the budget bar and every piece with POST /v1/context's answer, follow a piece's provenance link
(answered by a stand-in for the code host: the test has no network), copy the prompt, read the
projects page against GET /v1/projects/{id}/status and press "Re-index now", run queries until
the rate limit refuses one and see the 429 explained on the usage page, and check the usage
page's last calls against GET /v1/usage. A screenshot of each page is saved in --shots.
Prints one line per check and ends with 'N passed, 0 failed'; exits 1 on the first failure.
"""

import argparse
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("CTXGATE_CHROMIUM", "/usr/lib/chromium/chromium")
QUERY = "how is the quota reserved before work?"
PASSED = 0


def check(cond, what):
    global PASSED
    if not cond:
        print(f"FAILED: {what}", flush=True)
        print(f"{PASSED} passed, 1 failed", flush=True)
        sys.exit(1)
    PASSED += 1
    print(f"ok: {what}", flush=True)


def api(base, key, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def wait_for_load(page, section, before, seconds=30):
    """Waits until `section`'s count of finished loads passes `before`. Polled from here: the
    console's content security policy forbids the evaluated script `wait_for_function` sends."""
    deadline = time.monotonic() + seconds
    while int(page.get_attribute(section, "data-loads") or 0) <= before:
        if time.monotonic() > deadline:
            check(False, f"{section} finished loading within {seconds} s")
        page.wait_for_timeout(50)


def number(text):
    return int(re.sub(r"[^0-9]", "", text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--project", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--remote-web", required=True)
    ap.add_argument("--rate-limit", type=int, required=True)
    ap.add_argument("--shots", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--reindex-refused", default="")
    a = ap.parse_args()
    base = a.base.rstrip("/")
    os.makedirs(a.shots, exist_ok=True)
    shot = lambda page, name: page.screenshot(
        path=os.path.join(a.shots, f"{a.tag}-{name}.png"), full_page=True
    )

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
        # The code host's pages, answered here: the test has no network.
        followed = []

        def forge(route):
            followed.append(route.request.url)
            route.fulfill(
                status=200,
                content_type="text/html",
                body="<!doctype html><title>source</title><h1>stand-in for the code host</h1>",
            )

        ctx.route(re.compile(r"^https://(github|gitlab)\.com/.*"), forge)
        page = ctx.new_page()
        loaded = []
        page.on("response", lambda r: loaded.append(r))
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        # The browser logs each 401 and 429 it was answered with; those are expected here.
        page.on(
            "console",
            lambda m: m.type == "error"
            and not m.text.startswith("Failed to load resource")
            and errors.append(m.text),
        )

        # ---- sign in ----
        page.goto(base + "/")
        page.wait_for_selector("#page-signin:not([hidden])")
        check(page.url == base + "/console", f"/ opens the console ({page.url})")
        size = 0
        for r in loaded:
            if r.url.startswith(base) and not 300 <= r.status < 400:
                size += len(r.body())
        check(size < 100 * 1024, f"a page load is under 100 KB ({size} bytes)")
        shot(page, "signin")
        check(
            page.evaluate("document.activeElement.id") == "api-key",
            "the key field has the keyboard focus on load",
        )
        page.keyboard.type("ctxg_not_a_key_at_all")
        page.keyboard.press("Enter")
        page.wait_for_selector("#signin-error:not(:empty)")
        check("invalid_api_key" in page.inner_text("#signin-error"), "a wrong key is refused with its code")
        page.focus("#api-key")
        page.keyboard.type(a.key)
        page.keyboard.press("Enter")
        page.wait_for_selector("#page-usage:not([hidden]) [data-quota]")
        check(a.key not in page.url, "the key is not in the URL")
        check(
            page.evaluate("sessionStorage.getItem('ctxgate.key')") == a.key
            and page.evaluate("localStorage.length") == 0,
            "the key is kept in session storage only",
        )

        # ---- inspector: the bar's numbers are the API's ----
        page.click("nav a[data-page=inspector]")
        page.wait_for_selector(f"#project option[value='{a.project}']", state="attached")
        page.fill("#q", QUERY)
        page.select_option("#project", a.project)
        page.fill("#budget", "2000")
        page.select_option("#model", "gpt-4o")
        page.select_option("#profile", "expand")
        page.click("#inspect-run")
        page.wait_for_selector("#result:not([hidden])")
        req = {"project": a.project, "query": QUERY, "budget": 2000, "model": "gpt-4o", "profile": "expand"}
        status, answer = api(base, a.key, "POST", "/v1/context", req)
        check(status == 200, f"the API answers the same request ({status})")
        bar = answer["analysis"]["bar"]
        shown = {
            part: number(page.inner_text(f"#bar-table tr[data-part={part}] td[data-tokens]"))
            for part in ["query", "headers", "code", "summaries", "history", "free"]
        }
        check(
            shown == {k: bar[k] for k in shown},
            f"the budget bar shows the API's numbers: {shown}",
        )
        check(
            sum(v for k, v in shown.items() if k != "free") == answer["tokens_total"]
            and shown["free"] == 2000 - answer["tokens_total"],
            "the bar's parts sum to tokens_total and the free room to the rest of the budget",
        )
        window = answer["analysis"]["window"]["window"]
        check(
            page.get_attribute("#window-summary", "data-window") == str(window)
            and f"{window:,}" in page.inner_text("#window-summary"),
            f"the model's window is shown ({window})",
        )
        rows = page.query_selector_all("#pieces tbody tr")
        check(len(rows) == len(answer["pieces"]), f"every piece is listed ({len(rows)})")
        for row, piece in zip(rows, answer["pieces"]):
            cells = [c.inner_text() for c in row.query_selector_all("td")]
            where = f"{piece['path']}:{piece['start_line']}-{piece['end_line']}"
            ok = (
                where in cells[1]
                and cells[2].startswith(piece["form"])
                and number(cells[3]) == piece["tokens"]
                and cells[4] == f"{piece['score']:.3f}"
                and ("lexical" in cells[5] or cells[5] == "–")
            )
            check(ok, f"piece {where}: form, tokens, score and signals as the API says")
        first = answer["pieces"][0]
        link = page.get_attribute("#pieces tbody tr:first-child a.source", "href")
        check(link == first["source_url"], f"the piece links to its source: {link}")
        check(
            link.startswith(f"{a.remote_web}/blob/{a.commit}/")
            and link.endswith(f"#L{first['start_line']}-L{first['end_line']}"),
            "the link is pinned to the indexed commit and the piece's lines",
        )
        shot(page, "inspector")
        with page.expect_popup() as popup:
            page.click("#pieces tbody tr:first-child a.source")
        source = popup.value
        source.wait_for_load_state()
        check(source.url == link and followed and followed[-1] == link.split("#")[0],
              f"following the link opens the commit-pinned page ({source.url})")
        source.screenshot(path=os.path.join(a.shots, f"{a.tag}-provenance.png"))
        source.close()
        page.click("#copy-prompt")
        page.wait_for_selector("#copy-status:not(:empty)")
        copied = page.evaluate("navigator.clipboard.readText()")
        check(copied == answer["prompt"], f"the prompt is copied whole ({len(copied)} characters)")

        # ---- projects ----
        page.click("nav a[data-page=projects]")
        row = f"#projects-table tr[data-project='{a.project}']"
        page.wait_for_selector(row)
        _, st = api(base, a.key, "GET", f"/v1/projects/{a.project}/status")
        cells = [c.inner_text() for c in page.query_selector_all(f"{row} td")]
        ix = st["index"]
        check(
            number(cells[0]) == ix["version"]
            and st["index"]["commit"].startswith(cells[1])
            and len(cells[1]) == 12
            and number(cells[2]) == ix["files"]
            and number(cells[3]) == ix["chunks"]
            and number(cells[4]) == ix["tokens"]["o200k_base"],
            f"the projects page shows the status's version, commit and counts ({cells[:5]})",
        )
        page.click(f"{row} button")
        if a.reindex_refused:
            page.wait_for_selector(f"{row} [role=status]:has-text('HTTP')")
            check(
                a.reindex_refused in page.inner_text(f"{row} [role=status]"),
                f"re-index on this host is refused with {a.reindex_refused}",
            )
        else:
            page.wait_for_selector("#status:has-text('stands'), #status:has-text('published')")
            job = page.get_attribute(row + " td[data-job]", "data-job")
            check(job in ("up_to_date", "published"), f"re-index now ran a job that finished ({job})")
        shot(page, "projects")

        # ---- a 429, explained on the usage page ----
        page.click("nav a[data-page=inspector]")
        page.wait_for_selector("#inspect-run:not([disabled])")
        refused = False
        for _ in range(3 * a.rate_limit + 4):
            page.click("#inspect-run")
            page.wait_for_selector("#inspect-run:not([disabled])")
            if "quota_exceeded" in page.inner_text("#inspect-error"):
                refused = True
                break
        check(refused, "the inspector reports the refusal (HTTP 429 quota_exceeded)")
        # The refusal box shows before the usage page's own reads return: wait for the load the
        # click starts, or the bars and the calls below would be an earlier load's.
        loads = int(page.get_attribute("#page-usage", "data-loads") or 0)
        page.click("#inspect-error a[href='#usage']")
        wait_for_load(page, "#page-usage", loads)
        page.wait_for_selector("#refusal:not([hidden])")
        text = page.inner_text("#refusal")
        check(
            "429" in text and "requests per minute" in text and f"limit of {a.rate_limit}" in text
            and "Retry in" in text,
            f"the usage page explains the 429: {text.splitlines()[1] if len(text.splitlines()) > 1 else text}",
        )
        _, usage = api(base, a.key, "GET", "/v1/usage")
        u = usage["usage"]
        rate = page.inner_text("[data-quota=rate]")
        # Against the page's own count, not the later /v1/usage call's: the minute's window can
        # move between the two reads, and the bar is right for what the page was told.
        rate_used = number(page.get_attribute("[data-quota=rate] p", "data-used"))
        check(
            ("Limit reached" in rate) == (rate_used >= a.rate_limit),
            f"the rate bar says the limit is reached exactly when its count ({rate_used}) is at the limit",
        )
        check(
            number(page.get_attribute("[data-quota=tokens-day] p", "data-used")) <= u["tokens_today"],
            "the tokens-today bar is the ledger's",
        )
        check(
            number(page.get_attribute("[data-quota=index-jobs] p", "data-used"))
            <= u["index_jobs_this_hour"],
            "the usage page shows the hour's index jobs, as the ledger counts them",
        )
        calls = page.query_selector_all("#calls tbody tr")
        check(len(calls) == len(usage["recent"]), f"the last calls are the audit's ({len(calls)})")
        top = [c.inner_text() for c in calls[0].query_selector_all("td")]
        r0 = usage["recent"][0]
        check(
            number(top[3]) == r0["budget"] == 2000
            and number(top[4]) == r0["tokens_used"]
            and top[5] == "gpt-4o" and top[6] == "expand" and top[7] == r0["intent"] and r0["intent"],
            f"a call shows its budget, tokens, model, profile and intent ({top})",
        )
        shot(page, "usage")
        check(not errors, f"no script errors ({errors})")
        browser.close()
    print(f"{PASSED} passed, 0 failed", flush=True)


if __name__ == "__main__":
    main()
