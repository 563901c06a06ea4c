"""Fixtures for running the Python SDK's tests against a started memory service (HONCHO_URL)."""
import os
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).parent.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sdks" / "python" / "src"))

from sdks.python.src.honcho.client import Honcho  # noqa: E402

URL = os.environ.get("HONCHO_URL", "http://127.0.0.1:8923")
KEY = os.environ.get("HONCHO_KEY")


os.environ["HONCHO_URL"] = URL
FIXED = ["sdk-test-workspace", "sdk-test-workspace-sync", "sdk-test-workspace-async"]


class RealClient:
    """What the tests use of FastAPI's TestClient, over real HTTP."""

    def __init__(self):
        self.base_url = URL
        self.headers = {"Authorization": f"Bearer {KEY}"} if KEY else {}
        self._c = httpx.Client(base_url=URL, headers=self.headers, timeout=60)
        self._transport = httpx.HTTPTransport()

    def __getattr__(self, name):
        return getattr(self._c, name)


def _purge(c: httpx.Client, ws: str) -> None:
    """Each reference test starts on an empty database: delete the fixed workspaces and wait until they are gone."""
    import time

    r = c.post(f"/v3/workspaces/{ws}/sessions/list?size=100", json={})
    if r.status_code == 200:
        for item in r.json()["items"]:
            c.delete(f"/v3/workspaces/{ws}/sessions/{item['id']}")
    deadline = time.time() + 30
    while time.time() < deadline:
        if c.delete(f"/v3/workspaces/{ws}").status_code == 404:
            return
        time.sleep(0.1)
    raise RuntimeError(f"workspace {ws} not deleted")


@pytest.fixture(autouse=True)
def fresh_workspaces():
    c = httpx.Client(base_url=URL, headers={"Authorization": f"Bearer {KEY}"} if KEY else {}, timeout=60)
    for ws in FIXED:
        _purge(c, ws)
    yield


@pytest.fixture
def client():
    return RealClient()


def _honcho(kind: str) -> Honcho:
    return Honcho(workspace_id=f"sdk-test-workspace-{kind}", base_url=URL, api_key=KEY or "unused", timeout=60)


@pytest.fixture(params=["sync", "async"])
def client_fixture(request):
    return _honcho(request.param), request.param


@pytest.fixture
def honcho_test_client():
    return _honcho("sync")


@pytest.fixture
def honcho_sync_test_client():
    return _honcho("sync")


@pytest.fixture
def honcho_async_test_client():
    return _honcho("async")
