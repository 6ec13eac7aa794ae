# One image for every Sfumato process (server, scheduler, worker); docker-compose.yml picks the command.
#
# CPU build (default):  docker build -t sfumato .
# GPU worker build:     docker build -t sfumato:cuda --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 .

FROM node:20-slim AS web
WORKDIR /app/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM python:3.11-slim
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SFUMATO_HOME=/var/lib/sfumato \
    SFUMATO_ARTIFACT_ROOT=/artifacts

RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# torch first, from the index that matches the hosts (CPU or a CUDA build), as `make install` does.
RUN pip install --index-url "$TORCH_INDEX_URL" torch==2.13.0

COPY pyproject.toml README.md alembic.ini ./
COPY trainer trainer
COPY server server
COPY worker worker
COPY sfumato sfumato
COPY web web
COPY migrations migrations
COPY examples examples
# Editable, so the pages find web/node_modules next to their sources.
RUN pip install -e .
COPY --from=web /app/web/node_modules web/node_modules

RUN useradd --create-home --uid 1000 sfumato \
    && mkdir -p /var/lib/sfumato /artifacts \
    && chown sfumato /var/lib/sfumato /artifacts
USER sfumato

EXPOSE 8000
CMD ["sfumato", "server", "--host", "0.0.0.0", "--bootstrap"]
