#!/usr/bin/env bash
# Carries Nibble's build dependencies to a machine with no package access
# (a GPU box cut off from the network): Debian packages are downloaded here
# and unpacked there into a private prefix, without root and without apt.
#
#   scripts/offline-deps.sh download DIR        # here: fetch the .deb files into DIR
#   scripts/offline-deps.sh unpack DIR PREFIX   # there: unpack them under PREFIX
#
# Then configure with -DCMAKE_PREFIX_PATH=PREFIX/usr and run with
# LD_LIBRARY_PATH=PREFIX/usr/lib/x86_64-linux-gnu (the env file written by
# `unpack` sets both: `source PREFIX/env.sh`).
set -euo pipefail

# pybind11-dev: the Python module (its headers and CMake package; the GPU machine's Python
# brings its own headers and NumPy).
# libboost1.74-dev: the Boost headers and their CMake package (Debian 12's libboost-dev is an
# empty package that depends on it).
# libkainjow-mustache-dev: the header-only Mustache that renders `nibble report`'s page.
packages=(libfmt-dev libfmt9 libcli11-dev nlohmann-json3-dev libeigen3-dev librandom123-dev
          libgtest-dev libgmock-dev libgmp-dev libgmp10 libgmpxx4ldbl zlib1g-dev libboost1.74-dev
          pybind11-dev libkainjow-mustache-dev)

case "${1:-}" in
  download)
    dir=${2:?usage: offline-deps.sh download DIR}
    mkdir -p "$dir"
    (cd "$dir" && apt-get download "${packages[@]}")
    ;;
  unpack)
    dir=${2:?usage: offline-deps.sh unpack DIR PREFIX}
    prefix=${3:?usage: offline-deps.sh unpack DIR PREFIX}
    mkdir -p "$prefix"
    for deb in "$dir"/*.deb; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$deb" "$prefix"
      else  # a .deb is an ar archive holding data.tar.*
        member=$(ar t "$deb" | grep '^data\.tar')
        ar p "$deb" "$member" | tar -x -C "$prefix" -f - --auto-compress 2>/dev/null ||
          ar p "$deb" "$member" | tar -x -J -C "$prefix"
      fi
    done
    cat > "$prefix/env.sh" <<ENV
export CMAKE_PREFIX_PATH="$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PKG_CONFIG_PATH="$prefix/usr/lib/x86_64-linux-gnu/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$prefix"
ENV
    echo "offline-deps.sh: unpacked into $prefix; source $prefix/env.sh before configuring"
    ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
