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

# The dependencies pinned in pyproject.toml, as a requirements file: the next stage copies only
# that file, so a change elsewhere in pyproject.toml (or in the code) reuses its layer.
FROM ${BASE} AS requirements
# The base from Debian packages is imported from a tarball and sets no PATH.
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY pyproject.toml /src/
RUN python3 -c "import sys, tomllib; sys.stdout.write('\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']))" >/src/requirements.txt

# The dependencies in a virtual environment of their own.
FROM ${BASE} AS dependencies
# A CA bundle for pip, for a network whose HTTPS to PyPI goes through a TLS-intercepting proxy
# (containers/build.sh mounts the host's bundle for the build only; it is not in the image).
ARG PIP_CERT=
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=requirements /src/requirements.txt /src/
# What is removed after the install is never imported by the product: pip and setuptools (no
# installs at run time), the dependencies' own test suites, the kubernetes client's asyncio
# twin (kubernetes.aio, 68 MB with its bytecode; nothing imports it) and Django's translations
# other than English (30 MB; sentinel_site/settings.py fixes LANGUAGE_CODE to en-us and has no
# LocaleMiddleware, so no other language is ever activated).
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --quiet ${PIP_CERT:+--cert "$PIP_CERT"} --requirement /src/requirements.txt \
    && /opt/venv/bin/pip uninstall --quiet --yes pip setuptools \
    && find /opt/venv -type d -name tests -prune -exec rm -rf {} + \
    && rm -rf /opt/venv/lib/python3*/site-packages/kubernetes/aio \
    && find /opt/venv/lib/python3*/site-packages/django -type d -path '*/locale/*' \
        ! -path '*/locale/*/*' ! -name en -prune -exec rm -rf {} +

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
