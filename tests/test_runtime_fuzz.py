"""The differential fuzzer of the runtime's copy calls (tests/fuzz_runtime.py): a short run, and checks
that the fuzzer itself can fail (a wrong model is caught, a crashing worker is a finding)."""
import os

import fuzz_runtime

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
}


def test_short_fuzz_run_matches_the_model():
    tally = {}
    ran, findings = fuzz_runtime.fuzz(60000, seed=1, budget_s=25, tally=tally)
    assert findings == [], "\n".join(findings)
    assert ran >= 2000
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

