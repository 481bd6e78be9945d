#!/usr/bin/env python3
"""Takes the README's screenshot of the live page mid-typing, in headless Chromium.

Usage: python3 docs/screenshot.py [path/to/signup-server] [output.png]
Needs Debian's chromium + chromium-driver and `pip install selenium`.
"""
import re
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

binary = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/signup-server"
output = sys.argv[2] if len(sys.argv) > 2 else "docs/screenshot.png"

with tempfile.TemporaryDirectory() as data:
    server = subprocess.Popen(
        [binary, "--port", "0", "--seed-demo", "--database", f"{data}/db.sqlite"],
        stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        url = re.search(r"http://\S+", line).group(0)
        options = webdriver.ChromeOptions()
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=560,1240"):
            options.add_argument(flag)
        # Debian's driver; stops Selenium from trying to download one.
        driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
        try:
            driver.get(url)
            wait = WebDriverWait(driver, 10)

            def state(requirement):
                return driver.find_element(
                    By.CSS_SELECTOR, f'[data-requirement="{requirement}"]').get_attribute("data-state")

            def type_into(name, text, leave=True):
                field = driver.find_element(By.NAME, name)
                for key in text:
                    field.send_keys(key)
                    time.sleep(0.03)  # a person's typing pace
                if leave:
                    field.send_keys(Keys.TAB)

            type_into("username", "alice")
            wait.until(lambda _: state("username.available") == "unmet")
            type_into("email", "ada@example.com")
            type_into("password", "Lovelace1815")
            type_into("confirm", "Lovelace18", leave=False)
            wait.until(lambda _: state("password.common") == "met")
            driver.find_element(By.NAME, "username").click()  # leave confirm: its message shows
            wait.until(lambda _: driver.find_element(By.CSS_SELECTOR, '[data-message="confirm"]').text != "")
            driver.save_screenshot(output)
            print(f"saved {output}")
        finally:
            driver.quit()
    finally:
        server.terminate()
        server.wait(timeout=10)
