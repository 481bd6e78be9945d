"""Spoken where its people are (issues 46 and 58): twelve languages in Chromium against the real binary.

- The pseudo-locale (`--pseudo-locale`, `?lang=en-xa`: accented and 40 % longer) leaves no
  plain English on any page, live messages included: a text left hard-coded would show.
- Arabic, Japanese and Polish: axe finds nothing, and no element leaves the card or cuts its
  text, on a narrow phone-sized window, with the live checklist's messages showing. Arabic is
  right to left (the checklist mirrored), its address field left to right.
- Plurals by each language's rules on the page (Polish "8 znaków", Arabic's forms).
- Mails in each of the twelve languages: valid MIME (text and HTML), `Content-Language` the
  language's, no placeholder left unfilled; every block of the HTML part says its direction and
  language, and the service's name is isolated for direction in the text part.
- Issue 58: under the pseudo-locale no text is assembled outside a catalog (a separator, a
  prefix glued on) and a person's or the service's name inside a sentence is isolated (`ASSEMBLED`,
  itself tested on a page made to break it); in Arabic a Latin username keeps its place in its
  sentence (checked by the DOM, screenshot kept); axe finds nothing in Arabic and Japanese on
  every page visited, the 404 page and the pages of a server that mails included.
"""
import email.policy
import re
import subprocess
import urllib.parse

import pytest
from selenium.webdriver.common.by import By

from conftest import ROOT, SERVER, STRONG_PASSWORD, Page, Server, make_driver, Person
from test_accessibility import audit
from test_email_verification import code_in, mail_setup, sign_up_in_browser  # noqa: F401 (a fixture)

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


# Issue 58: what a page says is whole catalog sentences. Under the pseudo-locale each catalog
# text is one bracketed group ("[Šíğñ úƥ ···]"), with what fills it in inside. For every
# element, its own text (its text nodes; a <bdi> or <time> child stands in as ⟦⟧, other
# children are checked on their own) must be at most one group (two side by side are a prefix
# glued on) with nothing outside it: not a separator (": ", " · ", " – "), not a value. An
# element whose own text has no group is data standing alone (a name in <strong>, a language's
# name in the switcher). The same holds for the document's title and every aria-label. And a
# person's or operator's value (the `names` passed in) inside any longer text must be isolated
# for direction: in a <bdi>, or between FSI (U+2068) and PDI (U+2069).
ASSEMBLED = r"""
const names = arguments[0], problems = [];
const FSI = '\u2068', PDI = '\u2069';
function outside(text) {
  let rest = text.replace(/\u2068[^\u2068\u2069]*\u2069/g, '⟦⟧');
  let groups = 0, before;
  do {
    before = rest;
    rest = rest.replace(/\[[^\[\]]*\]/, () => { groups += 1; return '\u0000'; });
  } while (rest !== before);
  // Nested groups (a label inside a pattern) count as the one they are inside.
  const top = (rest.match(/\u0000/g) || []).length;
  return {top, rest: rest.replace(/\u0000/g, '')};
}
function check(text, where) {
  if (!text || !text.trim()) return;
  const {top, rest} = outside(text);
  if (top === 0) return;  // data standing alone
  if (top > 1) problems.push(where + ': ' + top + ' catalog texts side by side: ' + JSON.stringify(text));
  if (rest.trim() !== '') problems.push(where + ': assembled outside a catalog text (' + JSON.stringify(rest.trim()) + '): ' + JSON.stringify(text));
}
function isolated(text, name) {
  // Every occurrence between FSI and PDI.
  let index = text.indexOf(name);
  while (index >= 0) {
    const open = text.lastIndexOf(FSI, index), close = text.lastIndexOf(PDI, index);
    if (open < 0 || close > open) return false;
    index = text.indexOf(name, index + name.length);
  }
  return true;
}
for (const el of document.querySelectorAll('body *')) {
  if (el.closest('template, script, style, [hidden], bdi, time, select, textarea')) continue;
  let own = '';
  for (const child of el.childNodes) {
    if (child.nodeType === Node.TEXT_NODE) own += child.textContent;
    else if (child.nodeType === Node.ELEMENT_NODE) own += ['BDI', 'TIME'].includes(child.tagName) ? '⟦⟧' : ' ';
  }
  const where = el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : '');
  check(own, where);
  for (const name of names) {
    if (own.includes(name) && own.trim() !== name && !isolated(own, name)) problems.push(where + ': ' + name + ' not isolated in ' + JSON.stringify(own));
  }
  const label = el.getAttribute('aria-label');
  if (label) {
    check(label, where + '[aria-label]');
    for (const name of names) {
      if (label.includes(name) && label.trim() !== name && !isolated(label, name)) problems.push(where + '[aria-label]: ' + name + ' not isolated');
    }
  }
}
check(document.title, 'title');
for (const name of names) {
  if (document.title.includes(name) && !isolated(document.title, name)) problems.push('title: ' + name + ' not isolated');
}
return problems;
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
        # Tried to sign up while still unmet: the list of what is missing, each "label: rule"
        # one catalog sentence.
        page.button().click()
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-missing-list] li"), "the missing list")
        assert driver.execute_script(ASSEMBLED, ["LiveSignup"]) == [], "the sign-up form"
        for path in ["/signin?lang=en-xa", "/signin/provider/callback?lang=en-xa"]:
            page.open(server.url + path)
            assert english_left(driver.execute_script(VISIBLE_TEXT)) == [], path
            assert driver.execute_script(ASSEMBLED, ["LiveSignup"]) == [], path
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
            assert driver.execute_script(ASSEMBLED, ["pseudo_person", "LiveSignup"]) == [], path
        page.screenshot("pseudo-locale-account")
        # A wrong address is a page in the person's language too.
        page.open(f"{server.url}/no/such/page?lang=en-xa")
        assert english_left(driver.execute_script(VISIBLE_TEXT)) == [], "the 404 page"
        assert driver.execute_script(ASSEMBLED, ["LiveSignup"]) == [], "the 404 page"
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


# Where a name stands in the sentence that holds it: the rectangles of the name, of its first
# and last letters, and of the sentence's words before it, and the element's direction.
NAME_POSITION = r"""
const name = arguments[0];
const el = [...document.querySelectorAll('main p, main h1, main h2')].find(e => e.textContent.includes(name) && e.textContent.trim() !== name);
if (!el) return null;
const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
let node = null;
while (walker.nextNode()) { if (walker.currentNode.textContent.includes(name)) { node = walker.currentNode; break; } }
const at = node.textContent.indexOf(name);
function rect(start, end, inside = node) { const r = document.createRange(); r.setStart(inside, start); r.setEnd(inside, end); return r.getBoundingClientRect().toJSON(); }
// The words before the name in the sentence: in its own text node, or the text before the <bdi>.
let before = null;
const leading = node.textContent.slice(0, at).replace(/[\s\u2068]+$/, '');
if (leading.trim()) before = rect(0, leading.length);
const previous = node.parentElement.tagName === 'BDI' ? node.parentElement.previousSibling : null;
if (!before && previous && previous.nodeType === Node.TEXT_NODE && previous.textContent.trim()) {
  before = rect(0, previous.textContent.replace(/\s+$/, '').length, previous);
}
return {dir: getComputedStyle(el).direction, name: rect(at, at + name.length), first: rect(at, at + 1),
        last: rect(at + name.length - 1, at + name.length), before, text: el.textContent};
"""


def test_latin_names_keep_their_place_in_arabic_and_every_page_passes_axe_in_arabic_and_japanese(server):
    """Issue 58. In Arabic, a Latin username inside a sentence stays whole, reads left to right
    and stands where the sentence puts it (after the Arabic words before it: to their left);
    the service's Latin name is isolated in the title. axe finds nothing in Arabic or Japanese
    on any page this suite visits, the 404 page included."""
    for tag in ["ar", "ja"]:
        driver = make_driver(javascript=True)
        page = Page(driver)
        username = f"grace_hopper_{tag}"
        try:
            for path in ["/", "/signin", "/signin/provider/callback", "/recover", "/no/such/page"]:
                page.open(f"{server.url}{path}?lang={tag}")
                assert f'lang="{tag}"' in driver.page_source, path
                audit(page, f"issue58-{tag}-{path.strip('/').replace('/', '-') or 'signup'}")
                assert driver.execute_script(ASSEMBLED, ["LiveSignup"]) == [], path
            page.open(f"{server.url}/?lang={tag}")
            page.until_live()
            page.fill_valid(username)
            page.until(lambda: page.submit_enabled() == "true", "the form is complete")
            page.button().click()
            page.until(lambda: "/welcome" in driver.current_url, "signed up")
            for path in ["/welcome", "/account", "/account/delete", "/account/password", "/account/second-factor",
                         "/account/email"]:
                page.open(f"{server.url}{path}?lang={tag}")
                audit(page, f"issue58-{tag}-{path.strip('/').replace('/', '-')}")
                assert driver.execute_script(ASSEMBLED, [username, "LiveSignup"]) == [], path
            if tag == "ar":
                page.open(f"{server.url}/account?lang=ar")
                assert "\u2068LiveSignup\u2069" in driver.title, driver.title
                where = driver.execute_script(NAME_POSITION, username)
                assert where is not None, "the account page names the person in a sentence"
                assert where["dir"] == "rtl", where
                assert where["first"]["x"] < where["last"]["x"], ("the name reads left to right, whole", where)
                assert where["before"] is not None, where
                same_line = abs(where["before"]["top"] - where["name"]["top"]) < where["name"]["height"]
                if same_line:
                    assert where["name"]["right"] <= where["before"]["left"] + 1, \
                        ("the Arabic words before the name stand to its right", where)
                page.screenshot("issue58-arabic-account-latin-name")
        finally:
            driver.quit()


def test_the_pages_of_a_server_that_mails_pass_axe_in_arabic_and_japanese(mail_setup):  # noqa: F811
    """Issue 58: the pages only a server that sends mail has (the code page after signing up,
    asking for a way back in, the recovery code form), in Arabic and Japanese: axe finds
    nothing and no text is assembled outside a catalog."""
    smtp, start = mail_setup
    port, _ = start()
    for index, tag in enumerate(["ar", "ja"]):
        driver = make_driver(javascript=True)
        page = Page(driver)
        username, address = f"mailed_{tag}", f"mailed{index}@example.org"
        try:
            sign_up_in_browser(page, f"http://127.0.0.1:{port}/?lang={tag}", username, address)
            assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == tag
            audit(page, f"issue58-{tag}-verify")
            assert driver.execute_script(ASSEMBLED, [username, "LiveSignup"]) == [], "/verify"
            code = code_in(smtp.wait_for_mails(address, 1)[0])
            page.keys(driver.find_element(By.NAME, "code"), list(code))
            driver.find_element(By.CSS_SELECTOR, ".verify-form button[type=submit]").click()
            page.until(lambda: "/welcome" in driver.current_url, "signed in")
            assert username in driver.find_element(By.TAG_NAME, "h1").text
            driver.delete_all_cookies()
            page.open(f"http://127.0.0.1:{port}/recover?lang={tag}")
            audit(page, f"issue58-{tag}-recover")
            assert driver.execute_script(ASSEMBLED, ["LiveSignup"]) == [], "/recover"
            page.type("identifier", username)
            driver.find_element(By.CSS_SELECTOR, ".recover-form button[type=submit]").click()
            page.until(lambda: driver.find_elements(By.NAME, "code"), "the code form")
            audit(page, f"issue58-{tag}-recover-code")
            assert driver.execute_script(ASSEMBLED, [username, "LiveSignup"]) == [], "/recover's code form"
        finally:
            driver.quit()


def test_the_assembly_check_sees_glued_texts_separators_and_names_not_isolated():
    """The check the pseudo-locale tests lean on, on pages made to break it: each way of
    assembling text outside a catalog is reported, and whole sentences are not."""
    html = """<html><head><title>[Ƥȧğé] – LiveSignup</title></head><body>
<p>[Ńéŧŵǿřķ ··] 127.0.0.0/24</p>
<p>[Ḗřřǿř: ][Ŧíŧŀé ··]</p>
<p>[Šíğñéḓ íñ ȧş pseudo_person. ···]</p>
<p>[Šíğñéḓ íñ ȧş <bdi>pseudo_person</bdi>. ···]</p>
<p>[Šíğñéḓ íñ ȧş \u2068pseudo_person\u2069. ···]</p>
<p><strong>pseudo_person</strong></p>
<p>[[Ŭşéřñȧḿé ··]: [Ȧŧ ŀéȧşŧ 3 ··] ···]</p>
<button aria-label="[Řéḿǿṽé ··]: pseudo_person">x</button>
</body></html>"""
    driver = make_driver(javascript=True)
    try:
        driver.get("data:text/html;charset=utf-8," + urllib.parse.quote(html))
        problems = driver.execute_script(ASSEMBLED, ["pseudo_person", "LiveSignup"])
    finally:
        driver.quit()
    assert problems == [
        'p: assembled outside a catalog text ("127.0.0.0/24"): "[Ńéŧŵǿřķ ··] 127.0.0.0/24"',
        'p: 2 catalog texts side by side: "[Ḗřřǿř: ][Ŧíŧŀé ··]"',
        'p: pseudo_person not isolated in "[Šíğñéḓ íñ ȧş pseudo_person. ···]"',
        'button[aria-label]: assembled outside a catalog text (": pseudo_person"): "[Řéḿǿṽé ··]: pseudo_person"',
        "button[aria-label]: pseudo_person not isolated",
        'title: assembled outside a catalog text ("– LiveSignup"): "[Ƥȧğé] – LiveSignup"',
        "title: LiveSignup not isolated",
    ], problems


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
        html = next(part.get_content() for part in parsed.walk() if part.get_content_type() == "text/html")
        direction = "rtl" if tag == "ar" else "ltr"
        # Issue 58: mail clients keep the body's elements, not <html>: each says its direction.
        assert f'<div dir="{direction}" lang="{tag}"' in html, tag
        for block in re.findall(r"<(?:p|h1)\b[^>]*>", html):
            assert f'dir="{direction}"' in block or "data-code" in block, (tag, block)
        # The service's name, isolated for direction in the plain text.
        assert "\u2068LiveSignup\u2069" in text, tag
