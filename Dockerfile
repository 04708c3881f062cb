# The image deploy/ refers to as rollout-sentinel:0.1.0: the web app (gunicorn) and the operator
# (manage.py runoperator) from one image, holding only the runtime packages. `make image` builds
# it (containers/build.sh); docs/operations.md ("The image") says how and what it measures.
#
# BASE is the image's Python. For releases it is the default below, pinned by digest so a
# rebuild gets the same bytes: the digest recorded for docker.io/library/python:3.11.10-slim-bookworm
# in nalabelle/build's images/digests.Dockerfile (a digest-tracking repository); it could not be
# pulled and checked from the machine this was written on — run `docker buildx imagetools
# inspect python:3.11.10-slim-bookworm` before a release and update it with the Python patch
# version. Where no registry is reachable, `make image` passes a base built from Debian
# bookworm's packages (containers/base.sh): the same Python 3.11, from /usr/bin.
ARG BASE=docker.io/library/python:3.11.10-slim-bookworm@sha256:5148c0e4bbb64271bca1d3322360ebf4bfb7564507ae32dd639322e4952a6b16

# The base of the two build stages: BASE itself unless containers/build.sh passes one (where the
# base is built from Debian packages, the runtime base has no venv module and no strip: the
# build base adds python3-venv and binutils, containers/build-packages). Same Python either way.
ARG BUILD_BASE=${BASE}

# The dependencies pinned in pyproject.toml, as a requirements file: the next stage copies only
# that file, so a change elsewhere in pyproject.toml (or in the code) reuses its layer.
FROM ${BUILD_BASE} AS requirements
# The base from Debian packages is imported from a tarball and sets no PATH.
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY pyproject.toml /src/
RUN python3 -c "import sys, tomllib; sys.stdout.write('\\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']))" >/src/requirements.txt

# The dependencies in a virtual environment of their own.
FROM ${BUILD_BASE} AS dependencies
# A CA bundle for pip, for a network whose HTTPS to PyPI goes through a TLS-intercepting proxy
# (containers/build.sh mounts the host's bundle for the build only; it is not in the image).
ARG PIP_CERT=
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# strip, for the pruning below (in this stage only): the release base has apt but no binutils.
RUN command -v strip >/dev/null \
    || { apt-get update -qq && apt-get install -qq -y --no-install-recommends binutils >/dev/null; }
COPY --from=requirements /src/requirements.txt /src/
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --quiet ${PIP_CERT:+--cert "$PIP_CERT"} --requirement /src/requirements.txt
# Out goes what the product never uses at run time, in a layer of its own (changing it reinstalls
# nothing); what each step saves is measured in docs/operations.md, "The image".
# - pip and setuptools: nothing is installed at run time.
# - the dependencies' own test suites; the kubernetes client's asyncio twin (kubernetes.aio:
#   nothing imports it); translations other than English (the site is en-us only, without
#   LocaleMiddleware: sentinel_site/settings.py).
# - what only a build or an editor reads: C and Cython sources and headers, type stubs, gettext
#   sources, JavaScript/CSS source maps (static files are stored as they are, so nothing
#   rewrites references to them; a browser's developer tools get a 404); numpy.distutils.
# - matplotlib's example data; Pillow's AVIF codec (matplotlib writes PNG; without it Pillow
#   reports AVIF unsupported).
# - the source of the kubernetes client's generated API and model classes, kept as bytecode:
#   `kubernetes.client` imports every one, the product calls none (it uses the ApiClient), and
#   the bytecode is what an import reads.
# - the debugging symbols and symbol tables of the extension modules: --strip-unneeded keeps
#   what dynamic linking needs. Not the libraries wheels bundle (*.libs): auditwheel rewrote them
#   with patchelf, and strip then leaves OpenBLAS and libgfortran unloadable ("ELF load command
#   address/offset not page-aligned"); most of them come stripped anyway.
WORKDIR /opt/venv/lib/python3.11/site-packages
RUN /opt/venv/bin/pip uninstall --quiet --yes pip setuptools \
    && find . -type d -name tests -prune -exec rm -rf {} + \
    && rm -rf kubernetes/aio \
    && find . -type d -path '*/locale/*' ! -path '*/locale/*/*' ! -name en -prune -exec rm -rf {} + \
    && find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' \
        -o -name '*.pyi' -o -name '*.po' -o -name '*.pot' -o -name '*.map' \) -delete \
    && rm -rf numpy/distutils matplotlib/mpl-data/sample_data PIL/_avif.*.so pillow.libs/libavif-* \
    && for generated in kubernetes/client/api kubernetes/client/models; do \
        /opt/venv/bin/python -m compileall -q -b "$generated" \
        && find "$generated" -name '*.py' -delete \
        && find "$generated" -name __pycache__ -prune -exec rm -rf {} + || exit 1; done \
    && find . -path './*.libs' -prune -o -type f -name '*.so' -exec strip --strip-unneeded {} +

FROM ${BASE}
# HOME is /tmp, the one writable place (an emptyDir in deploy/): what keeps state under $HOME
# (gunicorn's control socket, matplotlib's font cache) then works on the read-only root.
# DATABASE_URL's default is the SQLite file on the volume /data, owned by the image's user
# (deploy/'s overlays set their own).
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PYTHONPATH=/app HOME=/tmp \
    DATABASE_URL=sqlite:////data/sentinel.sqlite3
COPY --from=dependencies /opt/venv /opt/venv
WORKDIR /app
COPY . .
# The code's bytecode is compiled here because the root filesystem is read-only at run time.
RUN python -m compileall -q -x '/manage\.py$' /app \
    && SENTINEL_SECRET_KEY=build python manage.py collectstatic --noinput --verbosity 0 \
    && mkdir -p /data && chown 10001:10001 /data
VOLUME /data
# A numeric non-root user and group (runAsNonRoot can check a number, not a name); the code is
# owned by root and read-only to it.
USER 10001:10001
EXPOSE 8000 9100
CMD ["gunicorn", "-c", "python:sentinel_site.gunicorn_conf", "sentinel_site.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2"]
