# The README's two set-up commands: `make demo` and `make test`. Both install everything they need.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Recording styles (gui_app/recorders/styles.py): X cursor themes and fonts the two style families draw from.
STYLE_PACKAGES := dmz-cursor-theme xcursor-themes adwaita-icon-theme breeze-cursor-theme chameleon-cursor-theme \
	crystalcursors bibata-cursor-theme comixcursors-righthanded-opaque fontconfig fonts-dejavu-extra \
	fonts-liberation2 fonts-freefont-ttf fonts-open-sans fonts-lato fonts-crosextra-carlito fonts-roboto-unhinted \
	fonts-urw-base35 fonts-cantarell fonts-comic-neue fonts-croscore fonts-hack
APT_PACKAGES := chromium chromium-driver xvfb xauth libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 \
	libfontconfig1 libdbus-1-3 libglib2.0-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 \
	libxcb-xinerama0 libxcb-randr0 libxcb-render-util0 libxcb-image0 fonts-liberation fonts-dejavu-core \
	$(STYLE_PACKAGES)
# The desktop recorder (`rollscope collect desktop`, its slow test and bench): a window manager, input and capture
# tools, the recorded applications and the GTK themes it varies between episodes (cursor themes: STYLE_PACKAGES);
# the threat scenarios (`--tasks threats`) also run a terminal (xterm), curl and wget.
DESKTOP_APT_PACKAGES := openbox xdotool ffmpeg xclip x11-utils x11-xserver-utils libreoffice-calc \
	libreoffice-writer libreoffice-gtk3 mousepad pcmanfm galculator gnome-themes-extra xterm curl wget
SAMPLES := resources/samples

.PHONY: demo test install system-deps bench screenshots package clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and exactly 2.13.0: the CPU build found locally (any other spec pulls CUDA packages)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[train,collect,dev,package,teams,cluster,exevrm]'
	@touch $(STAMP)

install: system-deps $(STAMP)

# A team's label store: the tests start a throw-away PostgreSQL server from Debian's package (tests/pg.py).
TEAM_PACKAGES := postgresql

system-deps:
	@missing=$$(for p in $(APT_PACKAGES) $(DESKTOP_APT_PACKAGES) $(TEAM_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian packages: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
		echo "Not root: the tests need these Debian packages; run:"; \
		echo "  sudo apt-get install -y $$missing"; \
	fi

demo: install
	$(BIN)/rollscope open $(SAMPLES)

test: install
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -p no:cacheprovider

bench: install
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b --quick || exit 1; done

screenshots: install
	xvfb-run -a -s "-screen 0 1600x1000x24" $(BIN)/python packaging/screenshots.py docs/screenshots

# The one-folder app in dist/rollscope/ (PyInstaller, packaging/rollscope.spec) with its .desktop entry, icon and
# README, packed as dist/rollscope-VERSION-linux-ARCH.tar.gz (packaging/build.py).
package: install
	$(BIN)/python packaging/build.py --dist dist --work build/pyinstaller

clean:
	rm -rf $(VENV) build dist *.egg-info
