"""Spoken where its people are (issue 46): twelve languages in Chromium against the real binary.

- The pseudo-locale (`--pseudo-locale`, `?lang=en-xa`: accented and 40 % longer) leaves no
  plain English on any page, live messages included: a text left hard-coded would show.
- Arabic, Japanese and Polish: axe finds nothing, and no element leaves the card or cuts its
  text, on a narrow phone-sized window, with the live checklist's messages showing. Arabic is
  right to left (the checklist mirrored), its address field left to right.
- Plurals by each language's rules on the page (Polish "8 znaków", Arabic's forms).
- Mails in each of the twelve languages: valid MIME (text and HTML), `Content-Language` the
  language's, no placeholder left unfilled.
"""
import email.policy
import re
import subprocess
import urllib.parse

import pytest
from selenium.webdriver.common.by import By

from conftest import ROOT, SERVER, STRONG_PASSWORD, Page, Server, make_driver, Person
from test_accessibility import audit
from test_email_verification import mail_setup  # noqa: F401 (a fixture)

LANGUAGES = ["en", "ar", "de", "es", "fr", "it", "ja", "nl", "pl", "pt-br", "tr", "zh-hans"]
# Words that are the same in every language: the service's and languages' own names.
NAMES = {"LiveSignup", "English", "Deutsch", "Español", "Français", "Italiano", "Nederlands", "Polski",
         "Português", "Brasil", "Türkçe"}

VISIBLE_TEXT = """
const out = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode, parent = node.parentElement;
  if (!parent || parent.closest('template, script, style, [hidden], [aria-hidden="true"]')) continue;
  const style = getComputedStyle(parent);
  if (style.display === 'none' || style.visibility === 'hidden') continue;
  out.push(node.textContent);
}
return out.join(' ');
"""

OVERFLOWS = """
const card = document.querySelector('main').getBoundingClientRect();
const bad = [];
for (const el of document.querySelectorAll('main *')) {
  if (el.closest('template, [hidden], .visually-hidden, script')) continue;
  const style = getComputedStyle(el);
  if (style.display === 'none' || style.visibility === 'hidden') continue;
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) continue;
  const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : '');
  if (r.left < card.left - 1 || r.right > card.right + 1) bad.push(name + ' leaves the card');
  if (el.tagName !== 'INPUT' && el.scrollWidth > el.clientWidth + 1 && style.overflowX !== 'visible') bad.push(name + ' cuts its text');
}
return bad;
"""


def english_left(text, allowed=()):
    """Words of four or more plain ASCII letters that are not names: English left untranslated."""
    words = re.findall(r"[^\W\d_]{4,}", text)
    # Capitals only are a code or a key (a second factor's base32 key), not words of a text.
    return sorted({word for word in words if word.isascii() and not word.isupper() and word not in NAMES
                   and word.lower() not in allowed})


@pytest.fixture
def pseudo_server(tmp_path):
    server = Server(tmp_path, ["--pseudo-locale", "--argon2-preset", "owasp-minimum"])
    yield server
    server.stop()


def test_the_pseudo_locale_leaves_no_english_on_any_page(pseudo_server):
    server = pseudo_server
    driver = make_driver(javascript=True)
    page = Page(driver)
    try:
        page.open(f"{server.url}/?lang=en-xa")
        assert 'lang="en-xa"' in driver.page_source
        page.until_live()
        page.type("username", "ab")
        page.type("email", "someone@gmial.com", leave=True)
        page.type("password", "short", leave=True)
        page.until(lambda: page.message("password") != "", "a live message")
        # What the person typed (and its suggested correction) is theirs, not a text of the page.
        assert english_left(driver.execute_script(VISIBLE_TEXT), allowed={"someone", "gmial", "gmail"}) == [], \
            "the sign-up form, live messages included"
        for path in ["/signin?lang=en-xa", "/signin/provider/callback?lang=en-xa"]:
            page.open(server.url + path)
            assert english_left(driver.execute_script(VISIBLE_TEXT)) == [], path
        # Signed in: the welcome and account pages.
        page.open(f"{server.url}/?lang=en-xa")
        page.until_live()
        page.fill_valid("pseudo_person")
        page.until(lambda: page.submit_enabled() == "true", "the form is complete")
        page.button().click()
        page.until(lambda: "/welcome" in driver.current_url, "signed up")
        for path in ["/welcome?lang=en-xa", "/account?lang=en-xa", "/account/delete?lang=en-xa",
                     "/account/password?lang=en-xa", "/account/second-factor?lang=en-xa"]:
            page.open(server.url + path)
            # The person's own name and their browser's (a device's label) are data, not texts of the page.
            assert english_left(driver.execute_script(VISIBLE_TEXT), allowed={"pseudo", "person", "chrome", "linux", "headless"}) == [], path
        page.screenshot("pseudo-locale-account")
    finally:
        driver.quit()


@pytest.mark.parametrize("tag", ["ar", "ja", "pl"])
def test_arabic_japanese_and_polish_pages_pass_axe_and_nothing_overflows(server, tag):
    driver = make_driver(javascript=True)
    page = Page(driver)
    try:
        driver.set_window_size(390, 1000)
        page.open(f"{server.url}/?lang={tag}")
        assert f'<html lang="{tag}" dir="{"rtl" if tag == "ar" else "ltr"}">' in driver.page_source
        page.until_live()
        page.type("username", "a")
        page.type("email", "someone@example", leave=True)
        page.type("password", "short1", leave=True)
        page.until(lambda: page.message("password") != "", "a live message in the language")
        assert "{" not in driver.execute_script(VISIBLE_TEXT), "every placeholder filled in"
        audit(page, f"signup-{tag}")
        assert driver.execute_script(OVERFLOWS) == [], "nothing leaves the card or cuts its text"
        page.screenshot(f"languages-{tag}-signup")
        if tag == "ar":
            assert page.field("email").get_attribute("dir") == "ltr", "an address is left to right"
            # Mirrored: each requirement's mark stands to the right of its words.
            item = driver.find_element(By.CSS_SELECTOR, '[data-requirement="username.length"]')
            icon = item.find_element(By.CSS_SELECTOR, ".requirement-icon").rect
            words = item.find_element(By.CSS_SELECTOR, ".requirement-text").rect
            assert icon["x"] > words["x"], (icon, words)
        for path in ["/signin", "/signin/provider/callback"]:
            page.open(f"{server.url}{path}?lang={tag}")
            audit(page, f"{path.strip('/').replace('/', '-')}-{tag}")
            assert driver.execute_script(OVERFLOWS) == [], path
            page.screenshot(f"languages-{tag}-{path.strip('/').replace('/', '-')}")
    finally:
        driver.quit()


def test_counts_take_each_languages_plural_form(server):
    driver = make_driver(javascript=False)
    page = Page(driver)
    try:
        # The classic policy's 8 characters: Polish "many" (znaków), Arabic "few" (3 to 10: أحرف).
        page.open(f"{server.url}/?lang=pl")
        assert "Co najmniej 8 znaków" in driver.page_source
        page.open(f"{server.url}/?lang=ar")
        assert "8 أحرف على الأقل" in driver.page_source
        page.open(f"{server.url}/?lang=en")
        assert "At least 8 characters" in driver.page_source
        page.open(f"{server.url}/?lang=fr")
        # In what the page says (a data attribute holds the script's own template).
        said = re.sub(r"<[^>]+>", " ", driver.page_source.split("<body", 1)[1])
        assert not re.search(r"\{[a-z_]+[,}]", said), "no placeholder left"
    finally:
        driver.quit()


def test_mails_in_every_language_are_valid_mime_with_their_content_language(mail_setup):  # noqa: F811
    smtp, start = mail_setup
    port, _ = start()
    for index, tag in enumerate(LANGUAGES):
        person = Person(port, f"127.0.46.{index + 1}")
        _, _, page = person.request("GET", f"/?lang={tag}")
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)
        address = f"mail_{index}@example.org"
        status, _, _ = person.request("POST", "/signup", {"token": token, "username": f"mail_{index}_{tag.replace('-', '_')}",
                                                          "email": address, "password": STRONG_PASSWORD,
                                                          "confirm": STRONG_PASSWORD, "lang": tag})
        assert status == 303, tag
        message = smtp.wait_for_mails(address, 1)[0]
        parsed = email.message_from_bytes(message.as_bytes(), policy=email.policy.default)
        assert parsed.defects == [] and all(part.defects == [] for part in parsed.walk()), tag
        expected = {"pt-br": "pt-BR", "zh-hans": "zh-Hans"}.get(tag, tag)
        assert parsed["Content-Language"] == expected, (tag, parsed["Content-Language"])
        kinds = {part.get_content_type() for part in parsed.walk()}
        assert {"text/plain", "text/html"} <= kinds, tag
        text = next(part.get_content() for part in parsed.walk() if part.get_content_type() == "text/plain")
        assert re.search(r"^\s+\d{6}\s*$", text, re.M), f"{tag}: the code"
        assert not re.search(r"\{[a-z_]+[,}]", text), f"{tag}: every placeholder filled in"
        assert str(parsed["Subject"]).strip(), tag
