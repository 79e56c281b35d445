"""A real browser for the UI tests: headless Debian chromium driven over the Chrome DevTools Protocol (its
websocket), so a test can open a page, wait until the rendered text shows what it expects, click a tab and keep
a screenshot. The single-page UIs (Prefect, MLflow) fetch their data after the page loads, so waiting on the
rendered text, not on the load event, is what tells that the data arrived."""
from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from websockets.sync.client import connect


class Browser:
    def __init__(self, width: int = 1400, height: int = 1000):
        binary = shutil.which("chromium")
        if binary is None:
            raise RuntimeError("chromium is not installed (the README's test command, .ci/test, installs Debian's "
                               "chromium)")
        self.profile = tempfile.mkdtemp(prefix="sluice-chromium-")
        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             f"--window-size={width},{height}", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = self._devtools_port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as response:
            page = next(target for target in json.load(response) if target["type"] == "page")
        self.socket = connect(page["webSocketDebuggerUrl"], max_size=64 << 20)
        self.ids = itertools.count(1)

    def _devtools_port(self, timeout_s: float = 30) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if match := re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line):
                return int(match.group(1))
            if not line and self.process.poll() is not None:
                break
        raise RuntimeError("chromium did not open its DevTools port")

    def call(self, method: str, **params) -> dict:
        request_id = next(self.ids)
        self.socket.send(json.dumps({"id": request_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def text(self) -> str:
        result = self.call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                           returnByValue=True)
        return result["result"].get("value", "")

    def wait_for_text(self, wanted: list[str], timeout_s: float = 60) -> str:
        """The page's rendered text once it holds every string in `wanted`; fails naming what is missing."""
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.text()
            missing = [item for item in wanted if item not in text]
            if not missing:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"not in the rendered page after {timeout_s:.0f} s: {missing}\n{text[:3000]}")
            time.sleep(0.5)

    def click_text(self, label: str) -> None:
        """Click the innermost visible element whose own text is `label` (a tab, a link)."""
        script = f"""(() => {{
            const all = [...document.querySelectorAll('button, a, [role=tab], li, span, div')];
            const hit = all.find(el => el.innerText && el.innerText.trim() === {json.dumps(label)}
                                      && el.offsetParent !== null);
            if (hit) {{ hit.click(); return true; }} return false; }})()"""
        if not self.call("Runtime.evaluate", expression=script, returnByValue=True)["result"].get("value"):
            raise AssertionError(f"nothing labelled {label!r} to click")

    def loaded_images(self, src_part: str) -> int:
        """How many images whose URL holds `src_part` the browser has fetched and decoded."""
        script = (f"[...document.images].filter(i => i.src.includes({json.dumps(src_part)}) "
                  "&& i.naturalWidth > 0).length")
        return self.call("Runtime.evaluate", expression=script, returnByValue=True)["result"]["value"]

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)
