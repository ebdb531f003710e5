# The Airflow image with zan installed (library + CLI); the DAGs are mounted from ./dags.
# Pinned: Airflow 3.3.2 on Python 3.11, the versions zan is tested with (uv.lock).
FROM apache/airflow:3.3.2-python3.11

USER root
RUN mkdir -p /opt/zan/data /opt/zan/landing /opt/zan/sources /opt/zan/models \
    && chown -R airflow:0 /opt/zan
USER airflow

COPY --chown=airflow:0 pyproject.toml README.md hatch_build.py /opt/zan/src/
COPY --chown=airflow:0 cli /opt/zan/src/cli
COPY --chown=airflow:0 runs /opt/zan/src/runs
COPY --chown=airflow:0 vectors /opt/zan/src/vectors
COPY --chown=airflow:0 lookup /opt/zan/src/lookup
COPY --chown=airflow:0 enrich /opt/zan/src/enrich
COPY --chown=airflow:0 extractors /opt/zan/src/extractors
COPY --chown=airflow:0 schemas /opt/zan/src/schemas
COPY --chown=airflow:0 serve /opt/zan/src/serve
COPY --chown=airflow:0 clients/python /opt/zan/src/clients/python
COPY --chown=airflow:0 data/sample /opt/zan/sources/sample
COPY --chown=airflow:0 data/golden /opt/zan/golden
# Every Python dependency at the version uv.lock resolved (the same lock the native stack and the tests run
# on): deploy/requirements.txt is exported from it by `make requirements`; zan itself adds nothing to it.
COPY --chown=airflow:0 deploy/requirements.txt /opt/zan/requirements.txt
RUN pip install --no-cache-dir -r /opt/zan/requirements.txt \
    && pip install --no-cache-dir --no-deps /opt/zan/src
