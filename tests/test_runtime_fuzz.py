"""The differential fuzzer of the runtime's calls (tests/fuzz_runtime.py): a short run, and checks
that the fuzzer itself can fail (a wrong model is caught, a crashing worker is a finding)."""
import os

import pytest

import fuzz_runtime

SHORT_RUN_CASES = 24000

API_CODES_SEEN_IN_A_RUN = {
    "aclrtMemcpy": {0, 100000, 107000},
    "aclrtMemcpyAsync": {0, 100000, 107000, 107003, 107017, 207000},
    "aclrtMemcpy2d": {0, 100000, 107000, 207000},
    "aclrtMemcpy2dAsync": {0, 100000, 107000, 107003, 107017},
    "aclrtMemcpyBatch": {0, 100000, 107000},
    "aclrtMemcpyBatchAsync": {0, 100000, 107000, 107017},
    "aclrtMemset": {0, 100000, 107000},
    "aclrtMemsetAsync": {0, 100000, 107000, 107003, 107017},
    # aclrtSetMemcpyDesc / aclrtMemcpyAsyncWithDesc / aclrtSynchronizeStream
    "descriptor": {"0/0/0", "0/0/507000", "207000/0/507000", "107000/100000/0", "0/107017/0", "0/207000/0"},
    # the steps of the event, context and peer-access sequences
    "aclrtCreateEvent": {0},
    "aclrtCreateEventWithFlag": {0, 100000, 107000},
    "aclrtRecordEvent": {0, 100000, 107000, 107003, 107017},
    "aclrtQueryEventStatus": {0, 100000, 107017, 207000},
    "aclrtSynchronizeEvent": {0, 100000, 107017, 207000},
    "aclrtDestroyEvent": {0, 100000, 107017},
    "aclrtCreateContext": {0, 100000, 107001},
    "aclrtSetCurrentContext": {0, 100000, 107000},
    "aclrtDestroyContext": {0, 100000, 107002},
    "aclrtGetCurrentContext": {0, 107002},
    "aclrtGetDevice": {0, 107002},
    "aclrtSynchronizeDevice": {0, 107002},
    "aclrtCreateStream": {0, 107002},
    "aclrtDestroyStream": {0, 100000, 107017},
    "aclrtDeviceCanAccessPeer": {0, 100000, 107000, 107001},
    "aclrtDeviceEnablePeerAccess": {0, 100000, 107001, 200006},
    "aclrtDeviceDisablePeerAccess": {0, 100000, 107001},
    "aclrtDevicePeerAccessStatus": {0, 100000, 107000},
}


def test_short_fuzz_run_matches_the_model():
    """A fixed number of cases (their codes and sequences depend only on the seed): 24000 reach every code
    above (seed 1 reaches the last of them after 18000). .ci/run runs the fuzzer's long run."""
    tally = {}
    ran, findings = fuzz_runtime.fuzz(SHORT_RUN_CASES, seed=1, tally=tally)
    assert findings == [], "\n".join(findings)
    assert ran == SHORT_RUN_CASES
    seen = {}
    for key in tally:
        api, code = key.rsplit(" ", 1)
        seen.setdefault(api, set()).add(code if "/" in code else int(code))
    for api, codes in API_CODES_SEEN_IN_A_RUN.items():
        assert codes <= seen.get(api, set()), f"{api}: the run reached only {sorted(seen.get(api, []), key=str)}"


class _AlwaysSuccess(fuzz_runtime.Model):
    def predict(self, case):
        return 0, [], None


def test_a_wrong_model_is_reported(acl_device):
    memory = fuzz_runtime.Memory()
    problems = [fuzz_runtime.run_case(memory, _AlwaysSuccess(memory), 3, i) for i in range(200)]
    problems = [p for p in problems if p is not None]
    assert any("code" in p for p in problems) and any("differs from the model" in p for p in problems)


def test_a_crashing_worker_is_a_finding(monkeypatch):
    monkeypatch.setenv("MS_MEMCOPY_FUZZ_ABORT_AT", "5")
    findings = fuzz_runtime.run_process(seed=0, first=0, count=10)
    assert len(findings) == 1 and "the worker died" in findings[0], findings
    assert os.environ["MS_MEMCOPY_FUZZ_ABORT_AT"] == "5"



class _DestroyedContextFallsBackToDevice0(fuzz_runtime.Model):
    """Wrong: a thread whose current context was destroyed would use device 0 again."""

    def context_step(self, step, state):
        result = super().context_step(step, state)
        if state["current"] is None:
            state["current"] = "primary0"
        return result


class _OneDirectionOfPeerAccessIsEnough(fuzz_runtime.Model):
    """Wrong: the status would be 1 once either device has enabled the other."""

    def peer_step(self, step, state):
        code, value = super().peer_step(step, state)
        if step["api"] == "aclrtDevicePeerAccessStatus" and code == 0 and step["device"] != step["peer"]:
            value = int(bool({(step["device"], step["peer"]), (step["peer"], step["device"])} & state["enabled"]))
        return code, value


@pytest.mark.parametrize("wrong_model, sequence", [(_DestroyedContextFallsBackToDevice0, "contexts"),
                                                   (_OneDirectionOfPeerAccessIsEnough, "peer access")])
def test_a_wrong_sequence_model_is_reported(acl_device, wrong_model, sequence):
    memory = fuzz_runtime.Memory()
    model = wrong_model(memory)
    problems = []
    for i in range(4000):
        if fuzz_runtime.make_case(5, i, memory, model)[1]["api"] == sequence:
            problems.append(fuzz_runtime.run_case(memory, model, 5, i))
    assert any(p is not None and "step" in p and "model" in p for p in problems), problems[:3]
