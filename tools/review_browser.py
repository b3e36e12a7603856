#!/usr/bin/python3
"""Drive the review desk in headless Chromium (Debian's chromium + chromium-driver, through
python3-selenium) for spec/review_browser_spec.lua and `make docs/review-desk.png`.

usage: review_browser.py walk BASE_URL            the spec's walk; prints one JSON object
       review_browser.py shot BASE_URL ITEM OUT   a screenshot of one item page (PNG)

Only the keyboard and the page's own links and buttons are used, as a reviewer would.
Exit 0 when the walk ran (its findings are in the JSON; the spec judges them), 3 when the
browser cannot start (the spec then says skipped), 1 on anything else.
"""
import json
import os
import shutil
import sys
import tempfile

try:
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError as e:  # python3-selenium missing
    print("selenium not importable: %s" % e, file=sys.stderr)
    sys.exit(3)

CHROMIUM = os.environ.get("JC_CHROMIUM", "/usr/bin/chromium")
DRIVER = os.environ.get("JC_CHROMEDRIVER", "/usr/bin/chromedriver")


def start(profile):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1366,900", "--user-data-dir=" + profile):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)


def wait_for(drv, what, timeout=60):
    WebDriverWait(drv, timeout).until(lambda d: d.execute_script("return document.readyState") == "complete"
                                      and what(d))


def press(drv, *keys):
    """Send keys to the page as a whole (the body), as a reviewer's keyboard would."""
    webdriver.ActionChains(drv).send_keys(*keys).perform()


def ctrl_enter(drv):
    webdriver.ActionChains(drv).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()


def no_alert(drv):
    try:
        drv.switch_to.alert
        return False
    except NoAlertPresentException:
        return True


def field(drv, pointer):
    return drv.find_element(By.CSS_SELECTOR, '.field[data-pointer="%s"]' % pointer)


def walk(base):
    out = {}
    profile = tempfile.mkdtemp(prefix="jc-chromium-")
    drv = None
    try:
        try:
            drv = start(profile)
        except WebDriverException as e:
            print("chromium did not start: %s" % e.msg, file=sys.stderr)
            return 3
        drv.set_page_load_timeout(60)  # (bounds only: a busy CI machine may take seconds)
        # 1. The queue.
        drv.get(base + "/")
        wait_for(drv, lambda d: d.find_elements(By.CSS_SELECTOR, "tr[data-href]"))
        out["queue_title"] = drv.find_element(By.TAG_NAME, "h1").text
        out["queue_items"] = [r.get_attribute("data-href") for r in drv.find_elements(By.CSS_SELECTOR, "tr[data-href]")]
        out["queue_reasons"] = [a.text for a in drv.find_elements(By.CSS_SELECTOR, ".counts a")]
        # 2. Open the first item with the keyboard: j selects it, o opens it.
        press(drv, "j")
        press(drv, "o")
        wait_for(drv, lambda d: "/item/" in d.current_url)
        out["opened"] = drv.current_url[len(base):]
        out["marks"] = [m.get_attribute("data-pointer") for m in drv.find_elements(By.CSS_SELECTOR, "pre.model mark[data-pointer]")]
        sel = Select(drv.find_element(By.NAME, "v/intent"))
        out["prefilled_intent"] = sel.first_selected_option.text
        # 3. Accept as it stands (a): the contract refuses "Lieferung", beside /intent.
        press(drv, "a")
        wait_for(drv, lambda d: d.find_elements(By.ID, "refused"))
        out["refused_notice"] = drv.find_element(By.ID, "refused").text
        out["intent_error"] = field(drv, "/intent").find_element(By.CSS_SELECTOR, ".err").text
        out["bad_fields"] = [f.get_attribute("data-pointer") for f in drv.find_elements(By.CSS_SELECTOR, ".field.bad")]
        # 4. A value outside the enum typed into the form itself (the select offers only the
        #    contract's values, so a forbidden one can only come from a tampered form): the
        #    server's gate refuses it all the same.
        drv.execute_script(
            "var s=document.getElementsByName('v/intent')[0]; var o=document.createElement('option');"
            "o.value='\"refund\"'; o.textContent='refund'; s.appendChild(o); s.value='\"refund\"';")
        ctrl_enter(drv)
        wait_for(drv, lambda d: d.find_elements(By.ID, "refused")
                 and "refund" in field(d, "/intent").find_element(By.CSS_SELECTOR, ".err").text)
        out["tampered_error"] = field(drv, "/intent").find_element(By.CSS_SELECTOR, ".err").text
        # 5. Fix the intent with the keyboard (e focuses the first bad field), keep the rest,
        #    and accept with Ctrl+Enter.
        press(drv, "e")
        active = drv.switch_to.active_element
        out["focused"] = active.get_attribute("name")
        Select(active).select_by_visible_text("delivery")
        drv.find_element(By.CSS_SELECTOR, 'input[name="v/urgent"][value="true"]').send_keys(Keys.SPACE)
        ctrl_enter(drv)
        wait_for(drv, lambda d: "saved=" in d.current_url)
        out["after_accept"] = drv.current_url[len(base):]
        out["saved_notice"] = drv.find_element(By.CSS_SELECTOR, ".notice.good").text
        # 6. The next item holds a mail with <script>: shown as text, nothing ran.
        out["mail_text"] = drv.find_element(By.ID, "mail").text
        out["scripts"] = drv.execute_script("return Array.prototype.map.call(document.scripts, function(s){return s.src})")
        out["no_alert"] = no_alert(drv)
        out["bold_in_mail"] = len(drv.find_elements(By.CSS_SELECTOR, "#mail b"))
        # 7. "Not for this job" with its key on this item.
        press(drv, "x")
        wait_for(drv, lambda d: "saved=m2" in d.current_url)
        out["after_not_applicable"] = drv.current_url[len(base):]
        # 8. s skips to the next without deciding.
        before = drv.current_url
        press(drv, "s")
        wait_for(drv, lambda d: d.current_url != before)
        out["after_skip"] = drv.current_url[len(base):]
        # 9. Back in the queue (q): two fewer to review.
        press(drv, "q")
        wait_for(drv, lambda d: d.find_elements(By.CSS_SELECTOR, "h1") and "queue" in d.find_element(By.TAG_NAME, "h1").text.lower())
        out["queue_title_after"] = drv.find_element(By.TAG_NAME, "h1").text
        out["console_errors"] = [e["message"] for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
    finally:
        if drv is not None:
            drv.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(out))
    return 0


def shot(base, item, path):
    profile = tempfile.mkdtemp(prefix="jc-chromium-")
    drv = None
    try:
        try:
            drv = start(profile)
        except WebDriverException as e:
            print("chromium did not start: %s" % e.msg, file=sys.stderr)
            return 3
        drv.get(base + "/item/" + item)
        wait_for(drv, lambda d: d.find_elements(By.CSS_SELECTOR, "form.decide"))
        # Show the contract at work: accept the model's value as it stands.
        press(drv, "a")
        wait_for(drv, lambda d: d.find_elements(By.ID, "refused"))
        drv.set_window_size(1366, 900)
        drv.save_screenshot(path)
    finally:
        if drv is not None:
            drv.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "walk":
        return walk(argv[2].rstrip("/"))
    if len(argv) >= 5 and argv[1] == "shot":
        return shot(argv[2].rstrip("/"), argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
