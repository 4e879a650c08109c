# An image that serves the xdev devices at /xdev.
#
#   docker build -t xdev .
#   docker run -d --name xdev --device /dev/fuse --cap-add SYS_ADMIN \
#       --security-opt apparmor:unconfined --stop-timeout 30 xdev
#
# FUSE needs the device (--device /dev/fuse) and the right to mount
# (--cap-add SYS_ADMIN; Docker's default AppArmor profile forbids mount(2)
# even then, hence apparmor:unconfined), as scripts/setup.sh describes.
# xdev runs as root, so it mounts with mount(2) itself. The container's
# main process is `xdev mount /xdev`, which prints `xdev: mounted /xdev`
# once the mount answers. `docker stop` sends SIGTERM: decisions under way
# get --grace (10 s) to finish, then xdev unmounts and exits 0; the stop
# timeout of 30 s leaves room for that before Docker's SIGKILL.
#
# The mount is in the container's mount namespace; use it from inside:
#
#   docker exec xdev xdev status
#   docker exec xdev sh -c 'echo "tests pass" > /xdev/resolve'
#
# Options go after the image name, replacing the default command:
#
#   docker run ... xdev mount /xdev --journal /var/log/xdev.jsonl

FROM rust:bookworm AS build
WORKDIR /src
COPY . .
# `cargo install` puts the binary under --root whatever the target
# directory is; --locked builds the versions Cargo.lock names.
RUN cargo install --locked --path . --root /out

FROM debian:bookworm-slim
# fuse3 (fusermount3), as scripts/setup.sh installs it: xdev falls back on
# it to mount and unmount wherever it cannot do so itself.
RUN apt-get update \
    && apt-get install -y --no-install-recommends fuse3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/bin/xdev /usr/local/bin/xdev
STOPSIGNAL SIGTERM
ENTRYPOINT ["xdev"]
CMD ["mount", "/xdev"]
