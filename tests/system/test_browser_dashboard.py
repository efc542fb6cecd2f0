"""The staff dashboard in headless Chromium against a real game server (world_example/).

A player's speech makes the Innkeeper tick through the loopback model server, so a trace
exists; a confirmation is queued server-side over telnet (the superuser's ``py``). Then the
browser logs in through the website's login form as the superuser, follows the site menu's link
to the NPC list, finds the Innkeeper, checks the charts (cost, a failed tick marked), history and
memory status, sets a tool rule and a bad budget through the forms, checks that tables scroll
inside a phone-sized window, opens a trace, approves the confirmation, and a non-staff account
gets the refusal page.

Needs Debian's ``chromium`` and ``chromium-driver`` and ``selenium`` in the venv
(``scripts/install_browser.sh``); skipped cleanly without them. Prints its run time.
"""

import os
import re
import shutil
import time

import pytest
from support.game_server import GameServer, TelnetClient

from evennia_ai.testing.model_server import ModelServer

pytestmark = [pytest.mark.server, pytest.mark.browser, pytest.mark.timeout(300)]

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# Set to a folder to keep screenshots of the pages (for docs and eyeballing the layout).
SHOTS = os.environ.get("EVENNIA_AI_SCREENSHOTS")

# The demo's settings install the dashboard (evennia_ai.web) already.
SETTINGS = """
EVENNIA_AI_MODEL = "openai/test-model"
EVENNIA_AI_API_BASE = "{url}"
EVENNIA_AI_API_KEY = "x"
EVENNIA_AI_TICK_INTERVAL = 5
EVENNIA_AI_AUTONOMY = False
EVENNIA_AI_MAX_RETRIES = 0
EVENNIA_AI_MEMORY_INIT_DELAY = 600
"""


def responder(body):
    return {"tool_calls": [{"name": "say", "arguments": {"message": "Welcome to the Tankard!"}}]}


def make_driver():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--window-size=1280,1000",
        # Evennia's base template links Bootstrap from CDNs: fail those at once.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    ):
        options.add_argument(arg)
    options.page_load_strategy = "eager"
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver


def login(driver, base, username, password):
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(f"{base}/auth/login/?next=/ai/")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "form input[type=submit]").click()


def shot(driver, name):
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1280, min(int(height) + 120, 5000))
        driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))
        driver.set_window_size(1280, 1000)


def wait_for(driver, predicate, timeout=30.0, what="condition"):
    """Poll ``predicate(driver)``; a page being replaced meanwhile (stale or missing elements)
    only means "not yet"."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate(driver):
                return
        except (StaleElementReferenceException, NoSuchElementException):
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; page:\n{driver.page_source[:3000]}")


def prepare_game(game) -> tuple[int, str]:
    """Over telnet as the superuser: one Innkeeper tick, a confirmation, a non-staff account.

    Returns:
        The Innkeeper's id and the confirmation's id.
    """
    with TelnetClient(game.telnet_port) as admin:
        assert "You become" in admin.login("admin", game.password)
        admin.read(0.5)
        # A tick through the model server, so the Innkeeper has a trace.
        admin.send("say Hello Innkeeper, any rooms free?")
        out = ANSI.sub("", admin.read_until("Welcome to the Tankard!", timeout=60))
        assert "Innkeeper says" in out
        npc_id = admin.py_json("me.search('Innkeeper').id")
        cid = admin.py_json(
            "__import__('evennia_ai.tools.approvals', fromlist=['x'])"
            ".get_confirmation_queue().add_entry(me.search('Innkeeper'), 'noop', "
            "{'arguments': {'reason': 'browser test'}}, reason='browser test')"
        )
        admin.py_json(
            "__import__('evennia.utils.create', fromlist=['x']).create_account("
            "'visitor', 'visitor@localhost', 'visitor-pass-1').key"
        )
        # A tick that failed, for the dashboard to mark.
        admin.py_json(
            "me.search('Innkeeper').ai.record_trace(__import__('evennia_ai.engine.trace', "
            "fromlist=['x']).TickTrace(tick_id=999, context_type='tick_event', "
            "stop_reason='error', error='model call failed: browser test').to_dict()) or 1"
        )
    return npc_id, cid


def confirmation_status(game, cid: str) -> str:
    with TelnetClient(game.telnet_port) as admin:
        assert "You become" in admin.login("admin", game.password)
        return admin.py_json(
            "__import__('evennia_ai.tools.approvals', fromlist=['x'])"
            f".get_confirmation_queue().get_entry('{cid}')['status']"
        )


def browse(driver, game, npc_id: int, cid: str) -> None:
    """The browser part: staff login, list, NPC page, trace, approve; a visitor refused."""
    from selenium.webdriver.common.by import By

    base = f"http://127.0.0.1:{game.web_port}"
    login(driver, base, "admin", game.password)
    wait_for(driver, lambda d: d.find_elements(By.ID, "ai-npc-list"), what="the NPC list")
    driver.get(f"{base}/")  # the site menu links the dashboard for staff
    wait_for(driver, lambda d: d.find_elements(By.ID, "ai-menu-link"), what="the menu link")
    driver.find_element(By.ID, "ai-menu-link").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "ai-npc-list"), what="the NPC list")
    shot(driver, "npc_list")
    row = driver.find_element(By.CSS_SELECTOR, 'tr[data-npc="Innkeeper"]')
    assert row.find_element(By.CSS_SELECTOR, ".ai-state").text in (
        "running",
        "paused",
        "asleep",
        "stopped",
    )
    row.find_element(By.CSS_SELECTOR, "a.ai-npc-link").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "ai-traces"), what="the traces table")
    assert f"/ai/npc/{npc_id}/" in driver.current_url
    shot(driver, "npc_detail")
    assert driver.find_elements(By.CSS_SELECTOR, "#ai-traces svg.ai-sections")
    assert "Get the tavern ready" in driver.find_element(By.ID, "ai-goals").text
    assert driver.find_elements(By.CSS_SELECTOR, "svg.ai-chart rect.ai-bar")
    dashboard_parts(driver)
    driver.find_element(By.CSS_SELECTOR, "tr:not(.ai-tick-error) a.ai-trace-link").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "ai-trace-title"), what="the trace page")
    assert "say" in driver.find_element(By.TAG_NAME, "body").text
    shot(driver, "trace_detail")
    driver.back()
    wait_for(driver, lambda d: d.find_elements(By.ID, f"approve-{cid}"), what="the approve button")
    driver.find_element(By.ID, f"approve-{cid}").click()
    wait_for(
        driver,
        lambda d: f"Approved {cid}: Innkeeper's noop ran"
        in d.find_element(By.TAG_NAME, "body").text,
        what="the approval",
    )
    assert not driver.find_elements(By.ID, f"approve-{cid}")
    assert confirmation_status(game, cid) == "approved"

    # A non-staff account is refused.
    login(driver, base, "visitor", "visitor-pass-1")
    wait_for(driver, lambda d: "/auth/login/" not in d.current_url, what="the visitor's login")
    driver.get(f"{base}/ai/")
    wait_for(driver, lambda d: d.find_elements(By.ID, "ai-refused"), what="the refusal page")
    body = driver.find_element(By.TAG_NAME, "body").text
    assert "Not allowed" in body and "perm *visitor = Builder" in body, body[:500]
    assert not driver.find_elements(By.ID, "ai-npc-list")
    assert not driver.find_elements(By.ID, "ai-menu-link")


def dashboard_parts(driver) -> None:
    """On the NPC page: cost beside tokens, the failed tick marked, bars on one scale, memory
    status and history, a tool rule and a budget set through the forms, tables that scroll
    inside a phone-sized window."""
    from selenium.webdriver.common.by import By

    assert driver.find_elements(By.CSS_SELECTOR, "#ai-chart-ticks svg .ai-cost-point")
    assert driver.find_elements(By.CSS_SELECTOR, "#ai-chart-ticks svg .ai-error-mark")
    assert driver.find_elements(By.CSS_SELECTOR, '#ai-traces tr.ai-tick-error[data-tick="999"]')
    assert "Long-term memory:" in driver.find_element(By.ID, "ai-longterm-status").text
    assert "messages" in driver.find_element(By.ID, "ai-history-table").text

    field = driver.find_element(By.ID, "ai-value-add_rule")
    field.send_keys("max_calls say 3")
    driver.find_element(By.ID, "ai-submit-add_rule").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "ai-rendered-rules"), what="the rule")
    assert "say" in driver.find_element(By.ID, "ai-rendered-rules").text
    assert "has a new tool rule (#1)" in driver.find_element(By.TAG_NAME, "body").text
    field = driver.find_element(By.ID, "ai-value-budget")
    field.clear()
    field.send_keys("tokens=lots")
    driver.find_element(By.ID, "ai-submit-budget").click()
    wait_for(
        driver,
        lambda d: "tokens must be a whole number" in d.find_element(By.TAG_NAME, "body").text,
        what="the budget refusal",
    )
    shot(driver, "npc_settings")

    driver.set_window_size(400, 900)
    try:
        page_width = driver.execute_script("return document.documentElement.scrollWidth")
        view_width = driver.execute_script("return window.innerWidth")
        assert page_width <= view_width + 1, (page_width, view_width)
        scrolls = driver.execute_script(
            "const box = document.getElementById('ai-traces').parentElement;"
            "return [box.className, box.scrollWidth > box.clientWidth];"
        )
        assert scrolls == ["ai-scroll", True], scrolls
    finally:
        driver.set_window_size(1280, 1000)


@pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="chromium/chromedriver not installed " "(scripts/install_browser.sh)",
)
def test_staff_dashboard_in_a_browser(tmp_path):
    pytest.importorskip("selenium")

    started = time.monotonic()
    with ModelServer(latency=0.05, responder=responder) as model:
        with GameServer(tmp_path, extra_settings=SETTINGS.format(url=model.url)) as game:
            server_ready = time.monotonic() - started
            driver = None
            try:
                npc_id, cid = prepare_game(game)
                driver = make_driver()
                browser_started = time.monotonic()
                browse(driver, game, npc_id, cid)
                browser_time = time.monotonic() - browser_started
            except BaseException:
                print(f"\n--- server log ---\n{game.log_tail(80)}")
                raise
            finally:
                if driver is not None:
                    driver.quit()
    print(
        f"\nbrowser dashboard test: {time.monotonic() - started:.1f} s in all "
        f"(server ready after {server_ready:.1f} s, browser part {browser_time:.1f} s)"
    )
