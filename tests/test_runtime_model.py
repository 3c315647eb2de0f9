"""The model-based test of the runtime's objects and their lifetimes (tests/runtime_model.py): the short
run, and checks that the test itself can fail: a wrong model is reported with the calls of a shrunk
example, and a runtime that dies is reported with the calls of the example it died in."""
import pytest

import runtime_model

SHORT_RUN_EXAMPLES = 150

# Calls and codes (and situations of the model) the short run must reach, or it tests less than it claims:
# releases in every state, calls on a thread whose context is gone, handles of released objects, streams
# of another context, failures of queued copies between devices, events, peer access.
REACHED_IN_THE_SHORT_RUN = {
    "aclrtResetDevice 0", "aclrtResetDevice 507007", "aclrtDestroyContext 0", "aclrtDestroyContext 107002",
    "aclrtSetCurrentContext 0", "aclrtSetCurrentContext 107000", "aclrtGetCurrentContext 107002",
    "aclrtCreateStream 107002", "aclrtDestroyStream 107017", "aclrtDestroyStream 107003",
    "aclrtMemcpyAsync 0", "aclrtMemcpyAsync 107003", "aclrtMemcpyAsync 107017", "aclrtMemcpyAsync 207000",
    "aclrtMemcpy 0", "aclrtMemcpy 507013", "aclrtMemsetAsync 0", "aclrtMemsetAsync 107003", "aclrtMemset 0",
    "aclrtSynchronizeStream 507013", "aclrtFree 0", "aclrtFree 107000",
    "aclrtFreeHost 0", "aclrtFreeHost 107000", "aclrtMallocHost 107002",
    "aclrtRecordEvent 0", "aclrtRecordEvent 107003", "aclrtQueryEventStatus 0", "aclrtSynchronizeEvent 0",
    "aclrtDestroyEvent 107017", "aclrtCreateEventWithFlag 107000",
    "aclrtDeviceEnablePeerAccess 0", "aclrtDeviceDisablePeerAccess 0", "aclrtDeviceEnablePeerAccess 200006",
    "model: queued copy between devices with peer access",
    "model: queued copy between devices without peer access",
}


def test_short_run_matches_the_model():
    """150 examples (seed 0 reaches every call above by 120); `python tests/runtime_model.py` runs 300, as
    the sanitizer pass of .ci/run does against the ASan+UBSan build."""
    outcome, findings = runtime_model.run(examples=SHORT_RUN_EXAMPLES)
    assert findings == [], "\n".join(findings)
    assert outcome["done"] == SHORT_RUN_EXAMPLES
    missing = REACHED_IN_THE_SHORT_RUN - set(outcome["tally"])
    assert not missing, f"the run never reached {sorted(missing)}"


@pytest.mark.parametrize("model_break", runtime_model.MODEL_BREAKS)
def test_a_wrong_model_is_reported(model_break):
    # One of them shrinks its example, as the long run does; the other reports it as found (faster).
    no_shrink = model_break != "memset-sets-value-plus-one"
    outcome, findings = runtime_model.run(examples=100, break_model=model_break, no_shrink=no_shrink)
    assert len(findings) == 1, findings
    assert "the model expects" in findings[0] or "differ from the model" in findings[0], findings[0]
    assert "calls of this example:" in findings[0]


def test_a_runtime_that_dies_is_reported_with_its_calls():
    outcome, findings = runtime_model.run(examples=20, abort_before="aclrtDestroyContext")
    assert outcome is None and len(findings) == 1, findings
    assert "signal SIGABRT" in findings[0], findings[0]
    calls = findings[0].split("never returned):\n", 1)[1].split("\nstderr", 1)[0].splitlines()
    assert calls[-1].startswith("t") and "aclrtDestroyContext(" in calls[-1] and " = " not in calls[-1], calls
