"""Recording styles without a browser: disjoint families, real X cursor themes read from their files, geometry."""

from __future__ import annotations

import random
import struct
from dataclasses import fields

import numpy as np
import pytest

from gui_app.training import cursors as xcursor
from gui_app.recorders import styles
from gui_app.recorders.miniwob import Geometry


def test_families_share_no_choice():
    a, b = styles.FAMILIES["A"], styles.FAMILIES["B"]
    for f in fields(styles.Family):
        if f.name == "p_no_pointer":
            continue
        va, vb = set(getattr(a, f.name)), set(getattr(b, f.name))
        # A border of 0 / margin of 0 / resize of 1 means "none": the only values both may use.
        assert va & vb <= {0, 1.0}, (f.name, va & vb)


def test_every_family_has_installed_themes_and_fonts():
    """The Makefile's APT_PACKAGES install these; a missing package is a broken install, not a skipped test."""
    for fam in ("A", "B"):
        have = styles.available(fam)
        themes = [t for t in have["pointers"] if t != "builtin"]
        assert len(themes) >= 4, f"family {fam}: cursor themes missing ({have['pointers']}); run make install"
        assert len(have["fonts"]) >= 4, f"family {fam}: fonts missing ({have['fonts']}); run make install"


def test_sampling_stays_in_its_family_and_spares_colour_tasks():
    rng = random.Random(0)
    for _ in range(200):
        s = styles.sample_style("B", "click-color", rng)
        fam = styles.FAMILIES["B"]
        assert s.family == "B" and s.dsf in fam.dsf and s.scheme in fam.schemes
        assert s.pointer is None or s.pointer in fam.pointers
        assert not styles.SCHEMES[s.scheme].get("invert"), "colour content must never be inverted"
    seen = {styles.sample_style("all", "login-user", rng).family for _ in range(50)}
    assert seen == {"A", "B"}
    plain = styles.sample_style("plain", "login-user", rng)
    assert plain.is_plain and styles.style_css(plain) == ""
    with pytest.raises(ValueError, match="unknown style set"):
        styles.sample_style("C", "login-user", rng)


def test_css_names_the_font_and_keeps_colour_content():
    s = styles.Style(family="B", font="Comic Neue", font_size=11.5, scheme="dark")
    css = styles.style_css(s)
    assert '"Comic Neue"' in css and "font-size: 11.5px" in css and "invert(" in css
    assert "#reward-display" in css
    # Only the page, the bar, text colour and buttons/fields are restyled: no rule for generic divs or spans.
    assert "div {" not in css and "span {" not in css


def test_xcursor_reads_real_themes_with_hotspots():
    theme = next(t for t in ("DMZ-White", "Adwaita", "redglass") if xcursor.theme_dir(t))
    arrow = xcursor.cursor_image(theme, "arrow", 24)
    hand = xcursor.cursor_image(theme, "hand", 24)
    text = xcursor.cursor_image(theme, "text", 24)
    for img in (arrow, hand, text):
        h, w = img.rgba.shape[:2]
        assert 8 <= h <= 64 and 8 <= w <= 64 and 0 <= img.xhot < w and 0 <= img.yhot < h
        assert img.rgba[..., 3].max() == 255 and img.rgba[..., 3].min() == 0
    assert not np.array_equal(arrow.rgba, hand.rgba) or arrow.rgba.shape != hand.rgba.shape
    # An arrow's hotspot is at its tip, top-left; an I-beam's near its middle.
    assert arrow.xhot < arrow.rgba.shape[1] / 3 and arrow.yhot < arrow.rgba.shape[0] / 3
    assert text.yhot > text.rgba.shape[0] / 4
    big = xcursor.cursor_image(theme, "arrow", 48)
    assert big.rgba.shape[0] > arrow.rgba.shape[0]
    frame = np.full((60, 60, 3), 200, np.uint8)
    xcursor.draw_image(frame, arrow, 10, 10)
    assert (frame != 200).any() and (frame[:8, :8] == 200).all()  # drawn from the hotspot on, not before it
    edge = xcursor.draw_image(np.full((20, 20, 3), 200, np.uint8), arrow, 18, 18)  # clipped, no error
    assert edge.shape == (20, 20, 3)


def test_xcursor_rejects_bad_files(tmp_path):
    bad = tmp_path / "left_ptr"
    bad.write_bytes(b"PNG not a cursor")
    with pytest.raises(xcursor.XcursorError, match="not an Xcursor file"):
        xcursor.read_xcursor(bad)
    # A table entry pointing past the end of the file.
    bad.write_bytes(b"Xcur" + struct.pack("<III", 16, 0x10000, 1) + struct.pack("<III", 0xFFFD0002, 24, 4096))
    with pytest.raises(xcursor.XcursorError, match="runs past the end"):
        xcursor.read_xcursor(bad)


def test_geometry_maps_css_to_frame_pixels():
    g = Geometry.of(styles.Style(family="B", dsf=1.5, margin=20, pad=16, resize=0.7))
    assert (g.width % 2, g.height % 2) == (0, 0)
    assert abs(g.width - (180 * 1.5 + 32) * 0.7) <= 2 and abs(g.height - (230 * 1.5 + 32) * 0.7) <= 2
    assert g.to_frame(0, 0) == pytest.approx((16 * 0.7, 16 * 0.7))
    assert g.to_frame(100, 50) == pytest.approx(((150 + 16) * 0.7, (75 + 16) * 0.7))
    plain = Geometry.of(styles.Style())
    assert (plain.width, plain.height) == (320, 420)
