"""The paper-scale cost table reads the same whatever order the dry run lists its jobs in."""
from neurips26.core import cost


def job(rule, gpus):
    return {"rule": rule, "threads": 1, "resources": {"gpu": gpus, "cpus_per_task": 8, "mem_mb": 16000, "runtime": 60}}


def test_table_does_not_depend_on_the_dry_runs_job_order():
    jobs = [job("p_train", 1), job("p_train", 1), job("p_size", 8), job("p_evaluate", 1), job("p_data", 0)]
    tables = {cost.markdown(cost.per_paper(order, ["p"])) for order in (jobs, jobs[::-1], jobs[2:] + jobs[:2])}
    assert len(tables) == 1
    row = tables.pop().splitlines()[2]
    assert row.index("`p_evaluate`") < row.index("`p_size`") < row.index("`p_train`")
    assert "`p_train`: 2 x (1 GPU" in row and "| 5 |" in row
