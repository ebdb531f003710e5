"""zan's native Airflow deployment: the docker-compose stack's services run from packages on one machine
(:mod:`deploy.stack`), with the compose file's settings (:mod:`deploy.settings`), driven through the Airflow
REST API (:mod:`deploy.api`)."""
