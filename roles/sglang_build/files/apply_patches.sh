#!/bin/sh
# apply_patches.sh SITE_PACKAGES PATCH...: apply a patch series in order, stop at the first
# patch that does not apply and print its name and the rejected hunks.
set -u
site=$1
shift
for p in "$@"; do
  name=$(basename "$p")
  if ! out=$(patch -p1 --forward --batch --no-backup-if-mismatch -d "$site" -i "$p" 2>&1); then
    echo "PATCH FAILED: $name"
    echo "$out"
    find "$site" -name '*.rej' -newer "$p" -exec sh -c 'echo "--- rejected hunks ($1):"; cat "$1"' sh {} \;
    exit 1
  fi
  echo "applied: $name"
done
