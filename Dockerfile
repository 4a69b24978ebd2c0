# DotSafe in a container: the official Swift image on Debian 12 (bookworm).
#
#   docker build -t dotsafe .
#   docker run --rm dotsafe --help
#
# Mounting needs FUSE inside the container:
#   --device /dev/fuse --cap-add SYS_ADMIN
# and, on hosts whose AppArmor profile blocks mount (Ubuntu, Debian with AppArmor):
#   --security-opt apparmor=unconfined
# The plaintext mount exists only inside the container. See README.md, "Docker".
# The same Swift as the project is built and tested with here (6.3); older compilers lack
# language features the code uses.
FROM swift:6.3-bookworm

WORKDIR /app
COPY . .

# tools/install-deps is the same script a developer runs (idempotent, root here); it warns
# that /dev/fuse is missing, which is expected while building an image.
RUN tools/install-deps \
    && rm -rf /var/lib/apt/lists/* \
    && swift build -c release \
    && ln -s /app/.build/release/dotsafe /usr/local/bin/dotsafe

ENTRYPOINT ["/app/.build/release/dotsafe"]
CMD ["--help"]
