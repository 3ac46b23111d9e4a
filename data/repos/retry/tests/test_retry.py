import pytest

from retry import RetryPolicy, call_with_retry


def flaky(failures):
    state = {"left": failures}

    def fn():
        if state["left"] > 0:
            state["left"] -= 1
            raise ConnectionError("down")
        return "ok"
    return fn


def test_default_policy_tries_three_times():
    assert RetryPolicy().max_attempts == 3
    assert call_with_retry(flaky(2)) == "ok"


def test_gives_up():
    with pytest.raises(RuntimeError):
        call_with_retry(flaky(5), RetryPolicy(max_attempts=2))


def test_other_errors_pass_through():
    def boom():
        raise KeyError("x")
    with pytest.raises(KeyError):
        call_with_retry(boom)
