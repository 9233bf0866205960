# vicogym environments as an OpenEnv server (docs/trainers-openenv.md).
#
#   docker build -t vicogym-serve .
#   docker run --rm -p 8000:8000 vicogym-serve                                  # vicogym/Chart-v0
#   docker run --rm -p 8000:8000 -e VICOGYM_ENV=vicogym/Evidence-v0 vicogym-serve --max-sessions 32
#
# The base package and the server's packages only (openenv, fastapi, uvicorn, pydantic, at
# the versions of the `trainers` extra in pyproject.toml, read from it): the chart and
# evidence environments need no torch, which the rest of that extra (trl, accelerate)
# would pull in. CLEVR needs the `clevr` extra and Natural the `natural` one.
FROM python:3.11-slim

# libseccomp: the sandbox of model-written code (vicogym.sandbox) loads it
RUN apt-get update \
    && apt-get install -y --no-install-recommends libseccomp2 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md ./
COPY vicogym vicogym
COPY programs programs
COPY editors editors
COPY renderers renderers
COPY envs envs
COPY sources sources
COPY structures structures
COPY checks checks
COPY assets assets

RUN pip install --no-cache-dir . \
    && pip install --no-cache-dir $(python -c "import re, tomllib; \
extra = tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['trainers']; \
print(' '.join(d for d in extra if re.split('[<>=!~ ;\\\\[]', d)[0] in ('openenv', 'fastapi', 'uvicorn', 'pydantic')))") \
    && python -c "import vicogym.serve"

# native thread pools would spin on the cores the sessions share; the server runs as nobody,
# whose caches (matplotlib's font list) go to /tmp
ENV OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    HOME=/tmp MPLCONFIGDIR=/tmp/matplotlib \
    VICOGYM_ENV=vicogym/Chart-v0
WORKDIR /tmp
USER nobody
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
# further flags (--max-sessions, --session-ttl, --env-kwargs ...) go after the image name
ENTRYPOINT ["sh", "-c", "exec vicogym serve \"$VICOGYM_ENV\" --host 0.0.0.0 --port 8000 \"$@\"", "vicogym-serve"]
