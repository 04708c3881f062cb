# The image deploy/ refers to as rollout-sentinel:0.1.0: the web app (gunicorn) and the operator
# (manage.py runoperator) from one image, holding only the runtime packages: .dockerignore lets
# through pyproject.toml, manage.py, crds/ (the REST API's schema is read from it) and
# sentinel_core, sentinel_cluster, sentinel_site, analyses, notifications, sentinel_operator — never
# devcluster, realcluster, testkit, demo, bench or tests, so `pip install .` finds nothing else to install.
#
# The base is pinned by digest so a rebuild gets the same bytes. The digest is the one recorded
# for docker.io/library/python:3.11.10-slim-bookworm in nalabelle/build's
# images/digests.Dockerfile (a digest-tracking repository); it could not be pulled and checked
# from the machine this was written on — run `docker buildx imagetools inspect
# python:3.11.10-slim-bookworm` before a release and update it with the Python patch version.
FROM docker.io/library/python:3.11.10-slim-bookworm@sha256:5148c0e4bbb64271bca1d3322360ebf4bfb7564507ae32dd639322e4952a6b16
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY . .
# tests/deploy/test_image.py runs this line (from `pip install` to the first `&&`) on the same
# filtered context: keep the install command on it.
RUN pip install --no-cache-dir . \
    && SENTINEL_SECRET_KEY=build python manage.py collectstatic --noinput \
    && rm -rf build *.egg-info var/*.sqlite3*
# A numeric non-root user and group (runAsNonRoot can check a number, not a name); the code is
# owned by root and read-only to it.
USER 10001:10001
EXPOSE 8000 9100
CMD ["gunicorn", "-c", "python:sentinel_site.gunicorn_conf", "sentinel_site.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2"]
