"""How metric points are packed into blocks, stated point by point: a block's figures and 16-step tiles are those
of its points, a merge keeps the stored point of a step, a batch's points are filed by key name and block, and a
stored row (SQLite and PostgreSQL) holds exactly the packing of its points."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from test_metric_storage import new_job

from server.models import METRIC_BLOCK_STEPS, MetricBlock
from server.services.metric_blocks import POINT, TILE, TILE_STEPS, BatchPoints, merge, pack, store, unpack
from trainer.spec.ingest import MetricStep

Point = tuple[int, float, float]


def points(*rows: Point) -> np.ndarray:
    """A POINT array of (step, value, wall) rows, in the order given."""
    return np.array(list(rows), dtype=POINT)


def rows(array: np.ndarray) -> list[Point]:
    return [(int(p["step"]), float(p["value"]), float(p["wall"])) for p in array]


def figures_of(block: list[Point]) -> dict[str, float]:
    """A block's figures computed directly from its points (sorted by step)."""
    values = [value for _step, value, _wall in block]
    return {
        "n": len(block),
        "total": sum(values),
        "first_step": block[0][0],
        "first_wall": block[0][2],
        "last_step": block[-1][0],
        "last_value": block[-1][1],
        "last_wall": block[-1][2],
        "min_value": min(values),
        "max_value": max(values),
    }


def tiles_of(block: list[Point]) -> list[tuple[int, int, float, float, float, float]]:
    """Per 16 steps of the block that hold points: (tile, last step, last value, last wall, minimum, maximum)."""
    groups: dict[int, list[Point]] = {}
    for point in block:
        groups.setdefault(point[0] % METRIC_BLOCK_STEPS // TILE_STEPS, []).append(point)
    return [
        (tile, group[-1][0], group[-1][1], group[-1][2], min(v for _s, v, _w in group), max(v for _s, v, _w in group))
        for tile, group in sorted(groups.items())
    ]


# Two blocks of one key: block 0 with points in tiles 0, 1 and 15 (tiles 2-14 hold none), block 3 with one point.
# Values go down and up inside a tile so that its last value is neither its minimum nor its maximum.
BLOCK_0 = [(0, 4.0, 10.0), (5, -2.0, 11.0), (15, 3.0, 12.5), (16, 7.0, 13.0), (31, 1.0, 14.0), (255, -9.5, 20.0)]
BLOCK_3 = [(3 * METRIC_BLOCK_STEPS + 17, 0.25, 30.0)]


def test_a_block_s_figures_are_those_of_its_points() -> None:
    packed = pack([points(*BLOCK_0), points(*BLOCK_3)])
    for index, block in enumerate([BLOCK_0, BLOCK_3]):
        got = {name: column[index].item() for name, column in packed.figures.items()}
        assert got == figures_of(block)


def test_a_block_has_one_tile_for_each_16_steps_that_hold_points_with_their_last_point_minimum_and_maximum() -> None:
    packed = pack([points(*BLOCK_3), points(*BLOCK_0)])  # the first point of all in tile 1, not 0
    tiles = np.frombuffer(packed.tiles, dtype=TILE)
    assert packed.tile_sizes.tolist() == [1 * TILE.itemsize, 3 * TILE.itemsize]
    assert [tuple(t.item()) for t in tiles] == tiles_of(BLOCK_3) + tiles_of(BLOCK_0)


def test_packed_points_are_every_block_s_points_end_to_end_with_each_block_s_byte_size() -> None:
    packed = pack([points(*BLOCK_0), points(*BLOCK_3)])
    assert rows(unpack(packed.points)) == BLOCK_0 + BLOCK_3
    assert packed.point_sizes.tolist() == [len(BLOCK_0) * POINT.itemsize, len(BLOCK_3) * POINT.itemsize]


def test_a_merge_into_nothing_keeps_the_new_points() -> None:
    assert rows(merge(None, points(*BLOCK_0))) == BLOCK_0


def test_a_merge_of_later_steps_appends_them() -> None:
    assert rows(merge(points(*BLOCK_0[:3]), points(*BLOCK_0[3:]))) == BLOCK_0


def test_a_merge_keeps_the_stored_point_of_a_step_both_hold() -> None:
    stored = points((1, 1.0, 1.0), (2, 2.0, 2.0))
    new = points((2, 99.0, 9.0), (3, 3.0, 3.0))
    assert rows(merge(stored, new)) == [(1, 1.0, 1.0), (2, 2.0, 2.0), (3, 3.0, 3.0)]


def test_a_merge_of_steps_before_the_stored_ones_sorts_the_union() -> None:
    stored = points((5, 5.0, 5.0), (6, 6.0, 6.0))
    new = points((1, 1.0, 1.0), (7, 7.0, 7.0))
    assert rows(merge(stored, new)) == [(1, 1.0, 1.0), (5, 5.0, 5.0), (6, 6.0, 6.0), (7, 7.0, 7.0)]


def test_a_merge_of_a_batch_that_repeats_its_last_stored_step_keeps_the_stored_point() -> None:
    stored = points((1, 1.0, 1.0), (2, 2.0, 2.0))
    new = points((2, 99.0, 9.0), (3, 3.0, 3.0), (4, 4.0, 4.0))
    assert rows(merge(stored, new)) == [(1, 1.0, 1.0), (2, 2.0, 2.0), (3, 3.0, 3.0), (4, 4.0, 4.0)]


def test_a_batch_out_of_order_is_sorted_and_keeps_the_first_of_a_repeated_step() -> None:
    new = points((3, 3.0, 3.0), (1, 1.0, 1.0), (3, 33.0, 4.0), (2, 2.0, 2.0))
    assert rows(merge(None, new)) == [(1, 1.0, 1.0), (2, 2.0, 2.0), (3, 3.0, 3.0)]


def test_a_batch_that_repeats_a_step_in_a_row_keeps_its_first_point() -> None:
    new = points((1, 1.0, 1.0), (2, 2.0, 2.0), (2, 22.0, 3.0), (3, 3.0, 4.0))
    assert rows(merge(None, new)) == [(1, 1.0, 1.0), (2, 2.0, 2.0), (3, 3.0, 4.0)]


def step(number: int, wall: float, **values: float) -> MetricStep:
    return MetricStep(step=number, wall_time=wall, values=values)


def test_a_batch_s_points_are_filed_under_their_key_names_with_their_steps_and_wall_times() -> None:
    steps = [
        step(1, 10.0, loss=1.0, kl=0.1),
        step(2, 20.0, loss=2.0, kl=0.2),
        step(3, 30.0, kl=0.3, loss=3.0),
        step(4, 40.0, reward=4.0),
    ]
    batch, skipped = BatchPoints.of_steps(steps)
    assert skipped == 0
    assert {key: rows(p) for key, p in batch.by_key.items()} == {
        "loss": [(1, 1.0, 10.0), (2, 2.0, 20.0), (3, 3.0, 30.0)],
        "kl": [(1, 0.1, 10.0), (2, 0.2, 20.0), (3, 0.3, 30.0)],
        "reward": [(4, 4.0, 40.0)],
    }


def test_non_finite_values_are_counted_as_skipped_and_a_key_left_without_points_is_dropped() -> None:
    steps = [step(1, 1.0, loss=float("nan"), kl=0.5, gone=float("inf")), step(2, 2.0, loss=2.0, kl=0.6, gone=-np.inf)]
    batch, skipped = BatchPoints.of_steps(steps)
    assert skipped == 3
    assert {key: rows(p) for key, p in batch.by_key.items()} == {
        "loss": [(2, 2.0, 2.0)],
        "kl": [(1, 0.5, 1.0), (2, 0.6, 2.0)],
    }


def test_non_finite_values_are_counted_across_steps_that_report_different_keys() -> None:
    steps = [step(1, 1.0, loss=float("nan")), step(2, 2.0, kl=float("inf")), step(3, 3.0, loss=float("nan"), kl=0.5)]
    batch, skipped = BatchPoints.of_steps(steps)
    assert skipped == 3
    assert {key: rows(p) for key, p in batch.by_key.items()} == {"kl": [(3, 0.5, 3.0)]}


def test_a_key_s_points_go_to_the_blocks_of_256_steps_that_hold_them() -> None:
    last_of_0, first_of_1, in_2 = METRIC_BLOCK_STEPS - 1, METRIC_BLOCK_STEPS, 2 * METRIC_BLOCK_STEPS + 9
    steps = points((3, 3.0, 3.0), (last_of_0, 1.0, 1.0), (first_of_1, 2.0, 2.0), (in_2, 9.0, 9.0))
    batch = BatchPoints({"loss": steps})
    touched = [(key, block, [s for s, _v, _w in rows(p)]) for key, block, p in batch.blocks()]
    assert touched == [("loss", 0, [3, last_of_0]), ("loss", 1, [first_of_1]), ("loss", 2, [in_2])]


def test_a_key_whose_steps_go_back_to_an_earlier_block_has_each_point_in_its_own_block() -> None:
    late, early = METRIC_BLOCK_STEPS + 4, 7
    batch = BatchPoints({"loss": points((late, 1.0, 1.0), (early, 2.0, 2.0), (late + 1, 3.0, 3.0))})
    touched = [(block, [s for s, _v, _w in rows(p)]) for _key, block, p in batch.blocks()]
    assert touched == [(0, [early]), (1, [late, late + 1])]


def _stored_rows(session: Session, job_id: int) -> dict[tuple[str, int, int], MetricBlock]:
    found = session.scalars(select(MetricBlock).where(MetricBlock.job_id == job_id)).all()
    return {(row.key, row.attempt, row.block): row for row in found}


def _assert_row_is_the_packing_of(row: MetricBlock, block: list[Point]) -> None:
    assert rows(unpack(row.points)) == block
    assert [tuple(t.item()) for t in np.frombuffer(row.tiles, dtype=TILE)] == tiles_of(block)
    assert {name: getattr(row, name) for name in figures_of(block)} == figures_of(block)


def test_a_stored_block_row_holds_the_packing_of_its_points(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        job = new_job(session)
        loss = BatchPoints({"loss": points(*BLOCK_0, *BLOCK_3), "kl": points(*BLOCK_3)})
        assert store(session, job.id, 1, loss) == len(BLOCK_0) + 2 * len(BLOCK_3)
        session.commit()
        stored = _stored_rows(session, job.id)
        assert set(stored) == {("loss", 1, 0), ("loss", 1, 3), ("kl", 1, 3)}
        _assert_row_is_the_packing_of(stored[("loss", 1, 0)], BLOCK_0)
        _assert_row_is_the_packing_of(stored[("loss", 1, 3)], BLOCK_3)
        _assert_row_is_the_packing_of(stored[("kl", 1, 3)], BLOCK_3)


def test_storing_into_stored_blocks_merges_and_counts_only_the_new_points(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        job = new_job(session)
        store(session, job.id, 1, BatchPoints({"loss": points(*BLOCK_0[:4])}))
        session.commit()
        again = BatchPoints({"loss": points((16, 70.0, 99.0), *BLOCK_0[4:], *BLOCK_3), "kl": points(*BLOCK_3)})
        assert store(session, job.id, 1, again) == len(BLOCK_0[4:]) + 2 * len(BLOCK_3)
        session.commit()
        stored = _stored_rows(session, job.id)
        assert set(stored) == {("loss", 1, 0), ("loss", 1, 3), ("kl", 1, 3)}
        _assert_row_is_the_packing_of(stored[("loss", 1, 0)], BLOCK_0)
        _assert_row_is_the_packing_of(stored[("loss", 1, 3)], BLOCK_3)


def test_blocks_of_another_attempt_or_job_are_neither_read_nor_changed(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        job, other = new_job(session), new_job(session)
        store(session, job.id, 1, BatchPoints({"loss": points(*BLOCK_0)}))
        store(session, other.id, 2, BatchPoints({"loss": points((1, 5.0, 5.0))}))
        session.commit()
        assert store(session, job.id, 2, BatchPoints({"loss": points(*BLOCK_0)})) == len(BLOCK_0)
        assert store(session, other.id, 1, BatchPoints({"loss": points(*BLOCK_0)})) == len(BLOCK_0)
        session.commit()
        stored = _stored_rows(session, job.id)
        _assert_row_is_the_packing_of(stored[("loss", 1, 0)], BLOCK_0)
        _assert_row_is_the_packing_of(stored[("loss", 2, 0)], BLOCK_0)
        assert rows(unpack(_stored_rows(session, other.id)[("loss", 2, 0)].points)) == [(1, 5.0, 5.0)]


def test_a_batch_with_no_points_stores_nothing(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        job = new_job(session)
        assert store(session, job.id, 1, BatchPoints({})) == 0
        assert _stored_rows(session, job.id) == {}
