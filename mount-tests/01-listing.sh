#!/usr/bin/env bash
# (a) The mount lists the three devices and four status files, and nothing
# else but the journal, pending/, plan/ and stage; devices are mode 0600
# (owner read/write), status files 0400 (read-only, the owner's: they show
# what the session holds; `--share-journal` makes them 0444); devices report
# a block size of at least 8192 (`echo` of up to 8 KiB arrives in one write).
. "$(dirname "$0")/lib.sh"

assert_listing "entries of $D"

for device in resolve reject propose; do
    [ -f "$D/$device" ] || fail "$D/$device is not a regular file"
    assert_eq "$(stat -c %a "$D/$device")" "600" "mode of $device"
    blksize=$(stat -c %o "$D/$device")
    [ "$blksize" -ge 8192 ] || fail "block size of $device is $blksize, expected at least 8192"
done
for file in status status.json last reminder; do
    [ -f "$D/$file" ] || fail "$D/$file is not a regular file"
    assert_eq "$(stat -c %a "$D/$file")" "400" "mode of $file"
done
note "entries: $(ls -A "$D" | tr '\n' ' '); devices 0600, status files 0400"
