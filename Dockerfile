# The image deploy/ refers to as rollout-sentinel:0.1.0: the web app (gunicorn) and the operator
# (manage.py runoperator) from one image.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir . \
    && SENTINEL_SECRET_KEY=build python manage.py collectstatic --noinput \
    && rm -rf var/*.sqlite3*
USER 10001
EXPOSE 8000 9100
CMD ["gunicorn", "-c", "python:sentinel_site.gunicorn_conf", "sentinel_site.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2"]
