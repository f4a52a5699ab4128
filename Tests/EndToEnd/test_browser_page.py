"""The page a browser login ends on, as a person sees it: the pages sesamectl answered a real login
with (a success, and a refusal whose reason came form-encoded) are rendered by headless Chromium,
and their screenshots must show the styled page. Each page must load nothing: no URL of any kind
and a policy that forbids all but its inline style. The screenshots are kept in
$SESAME_SCREENSHOT_DIR when it is set, for a person to look at."""

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

# test_oauth's `daemon` fixture: its providers, of which `web` logs in with a browser.
from test_oauth import daemon  # noqa: F401
from test_sesamectl_login import browser_login, refused_login

WIDTH, HEIGHT = 800, 600
# BrowserPage's page background and the marks of a success and a failure, in the light and the
# dark colour scheme: seeing them proves the inline style was applied, not refused by the page's
# own policy.
LIGHT = {"background": (0xF2, 0xF4, 0xF7), "done": (0x1A, 0x7F, 0x37), "failed": (0xCF, 0x22, 0x2E)}
DARK = {"background": (0x0D, 0x11, 0x17), "done": (0x3F, 0xB9, 0x50), "failed": (0xF8, 0x51, 0x49)}
# Anything that could make a page fetch or send something: a URL, an attribute that takes one,
# CSS that loads one, a script, a frame, a form.
RESOURCE = re.compile(r"https?:|//[a-z0-9]|\b(?:src|href|action|srcset)\s*=|@import|url\("
                      r"|<(?:script|link|img|iframe|object|embed|form)\b", re.IGNORECASE)


@pytest.fixture
def chromium() -> str:
    """Chromium's path; scripts/bootstrap installs it (Debian's `chromium`)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("chromium is not installed (scripts/bootstrap installs Debian's chromium package)")
    return found


@pytest.fixture
def screenshots(tmp_path) -> Path:
    """Where screenshots go: $SESAME_SCREENSHOT_DIR, so they outlive the test, or tmp_path."""
    directory = Path(os.environ.get("SESAME_SCREENSHOT_DIR") or tmp_path / "screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def screenshot(chromium: str, html: str, name: str, directory: Path, tmp_path: Path,
               dark: bool = False) -> list[tuple[int, ...]]:
    """Renders `html`, saved as directory/NAME.html, in headless Chromium at WIDTH×HEIGHT (as a
    browser set to a dark colour scheme if `dark`), saves the screenshot as directory/NAME.png and
    returns its pixels (RGB), after checking their number."""
    page = directory / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    png = directory / f"{name}.png"
    png.unlink(missing_ok=True)
    # Blink's preferred colour scheme: 0 is dark, 1 light.
    scheme = f"--blink-settings=preferredColorScheme={0 if dark else 1}"
    result = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                             "--no-first-run", "--force-color-profile=srgb", f"--user-data-dir={tmp_path / 'profile'}",
                             scheme, f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", page.as_uri()],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and png.exists(), result.stderr[-3000:]
    print(f"\nthe {name} page: {page}, its screenshot: {png}")
    width, height, pixels = decode_png(png.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    return pixels


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """The width, height and RGB pixels of an 8-bit, non-interlaced RGB or RGBA PNG, such as
    Chromium writes (PNG specification, sections 11 and 9: chunks, then filtered rows)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    chunks, offset = {}, 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        chunks[kind] = chunks.get(kind, b"") + data[offset + 8:offset + 8 + length]
        offset += length + 12
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(chunks[b"IDAT"])
    previous = bytearray(stride)
    pixels = []
    for y in range(height):
        start = y * (stride + 1)
        row = unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), previous, channels)
        pixels.extend(zip(row[0::channels], row[1::channels], row[2::channels]))
        previous = row
    return width, height, pixels


def unfilter(kind: int, row: bytearray, above: bytearray, step: int) -> bytearray:
    """One scanline with its filter (none, sub, up, average, Paeth) undone."""
    if kind == 1:
        for i in range(step, len(row)):
            row[i] = (row[i] + row[i - step]) & 0xFF
    elif kind == 2:
        row = bytearray((a + b) & 0xFF for a, b in zip(row, above))
    elif kind == 3:
        for i in range(len(row)):
            row[i] = (row[i] + ((row[i - step] if i >= step else 0) + above[i]) // 2) & 0xFF
    elif kind == 4:
        for i in range(len(row)):
            a, b, c = (row[i - step], above[i], above[i - step]) if i >= step else (0, above[i], 0)
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    return row


def assert_rendered(pixels: list[tuple[int, ...]], kind: str, colours: dict) -> None:
    """The screenshot shows the styled page: the scheme's background in the corner, the colour of
    the mark of `kind`, and text (many colours, a fair share of pixels not the background)."""
    background = colours["background"]
    assert pixels[0] == background, f"corner {pixels[0]}, not {background}: the page's style was not applied"
    assert colours[kind] in pixels, f"no pixel of the {kind} mark's colour {colours[kind]}"
    assert len(set(pixels)) > 50, "the screenshot is nearly blank"
    assert sum(pixel != background for pixel in pixels) > len(pixels) // 20, "the screenshot is mostly background"


def assert_self_contained(html: str) -> None:
    """The page references nothing outside itself, and says so in its policy."""
    assert not RESOURCE.findall(html), RESOURCE.findall(html)
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert policy and "default-src 'none'" in policy[1] and "style-src 'unsafe-inline'" in policy[1], html[:600]
    assert '<meta name="viewport"' in html and "<style>" in html and "prefers-color-scheme:dark" in html


def test_the_success_page_renders(daemon, idp, chromium, screenshots, tmp_path):
    """Logged in: the heading, who logged in with which provider, the account, and that the tab
    may be closed."""
    page, process, out, err = browser_login(daemon, idp)
    assert process.returncode == 0, err
    account = re.search(r"logged in: (\S+)", out)[1]
    html = page.text
    assert page.status_code == 200 and "<h1>Logged in</h1>" in html, html
    # The header's policy applies too: it must let the page's style in as well.
    assert "style-src 'unsafe-inline'" in page.headers["Content-Security-Policy"], page.headers
    assert "You are logged in as Bob." in html and "<dd>web</dd>" in html and f"<dd>{account}</dd>" in html, html
    assert "You can close this tab and return to the terminal." in html, html
    assert_self_contained(html)
    assert_rendered(screenshot(chromium, html, "browser-page-success", screenshots, tmp_path), "done", LIGHT)
    dark = screenshot(chromium, html, "browser-page-success-dark", screenshots, tmp_path, dark=True)
    assert_rendered(dark, "done", DARK)


def test_a_refusal_page_renders_with_its_decoded_reason(daemon, chromium, screenshots, tmp_path):
    """The provider refused, its reason form-encoded and carrying markup: the page says the
    login failed, quotes the reason decoded and escaped, and says how to try again."""
    page, status, _ = refused_login(daemon, "The+user+denied+access+%3Cb%3Etoday%3C%2Fb%3E+%2B+left")
    assert status == 1
    html = page.text
    assert "<h1>Login failed</h1>" in html and "The provider refused the login" in html, html
    assert "<dd>web</dd>" in html and "<dd>access_denied</dd>" in html, html
    assert "The user denied access &lt;b&gt;today&lt;/b&gt; + left" in html and "<b>" not in html, html
    assert "<code>sesamectl login web</code>" in html, html
    assert_self_contained(html)
    assert_rendered(screenshot(chromium, html, "browser-page-failure", screenshots, tmp_path), "failed", LIGHT)
