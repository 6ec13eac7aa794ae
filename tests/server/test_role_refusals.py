"""The role rules of server/services/scoping.py on callers built in memory: who may submit, change a job,
manage a team or hosts, and the words each refusal says (which team, which role, what to do instead)."""

from __future__ import annotations

import pytest
from server_harness import Harness
from sqlalchemy import select

from server.models import Job, Team
from server.services.auth import Caller, TeamRole
from server.services.errors import FieldErrors, Forbidden, NotFound
from server.services.scoping import (
    can_manage_hosts,
    ensure_can_act,
    ensure_server_admin,
    ensure_team_admin,
    get_visible_job,
    team_for_submission,
    visibility,
    visible_team,
)

LAB = TeamRole(1, "lab", "member")
STUDIO = TeamRole(2, "studio", "admin")


def caller(*teams: TeamRole, is_admin: bool = False, can_write: bool = True, user_id: int = 7) -> Caller:
    return Caller(user_id, "max", is_admin, teams, can_write)


def field_error(refused: pytest.ExceptionInfo[FieldErrors]) -> tuple[str, str]:
    [error] = refused.value.detail
    return error["field"], error["message"]


def test_a_named_team_the_caller_is_not_in_is_refused_on_team_listing_theirs() -> None:
    with pytest.raises(FieldErrors) as refused:
        team_for_submission(caller(LAB, STUDIO), "other")
    assert field_error(refused) == ("team", "you are not a member of team 'other'; your teams: lab, studio")


def test_a_named_team_refused_to_a_caller_in_no_team_lists_none() -> None:
    with pytest.raises(FieldErrors) as refused:
        team_for_submission(caller(), "lab")
    assert field_error(refused) == ("team", "you are not a member of team 'lab'; your teams: none")


def test_without_a_team_name_the_only_team_is_chosen_and_a_named_one_is_found_among_several() -> None:
    assert team_for_submission(caller(LAB), None) == LAB
    assert team_for_submission(caller(LAB, STUDIO), "studio") == STUDIO


def test_without_a_team_name_a_caller_in_no_team_is_told_to_ask_an_admin() -> None:
    with pytest.raises(FieldErrors) as refused:
        team_for_submission(caller(), None)
    assert field_error(refused) == ("team", "you belong to no team; ask an admin to add you to one")


def test_without_a_team_name_a_caller_in_several_teams_is_told_to_choose_one() -> None:
    with pytest.raises(FieldErrors) as refused:
        team_for_submission(caller(LAB, STUDIO), None)
    assert field_error(refused) == ("team", "you belong to several teams; choose one with ?team= (lab, studio)")


def test_a_viewer_cannot_submit_and_is_told_the_role_and_team() -> None:
    with pytest.raises(Forbidden) as refused:
        team_for_submission(caller(TeamRole(1, "lab", "viewer")), "lab")
    assert refused.value.detail == "role 'viewer' in team 'lab' cannot submit jobs"


def test_a_read_only_token_cannot_submit_even_as_a_team_admin() -> None:
    with pytest.raises(Forbidden) as refused:
        team_for_submission(caller(STUDIO, can_write=False), "studio")
    assert refused.value.detail == "this token is read-only"


def job(team_id: int | None, owner_id: int) -> Job:
    return Job(team_id=team_id, owner_id=owner_id)


def test_a_member_changes_their_own_job_and_a_team_admin_anyone_s() -> None:
    ensure_can_act(caller(LAB), job(1, owner_id=7))
    ensure_can_act(caller(STUDIO), job(2, owner_id=99))
    ensure_can_act(caller(is_admin=True), job(5, owner_id=99))


def test_a_member_cannot_change_another_member_s_job_and_is_sent_to_an_admin() -> None:
    with pytest.raises(Forbidden) as refused:
        ensure_can_act(caller(LAB), job(1, owner_id=99))
    assert refused.value.detail == "a member may cancel or retry only their own jobs; ask an admin of the team"


def test_a_viewer_and_a_caller_outside_the_team_cannot_change_its_jobs_even_their_own() -> None:
    for teams, role in (((TeamRole(1, "lab", "viewer"),), "'viewer'"), ((STUDIO,), "None")):
        with pytest.raises(Forbidden) as refused:
            ensure_can_act(caller(*teams), job(1, owner_id=7))
        assert refused.value.detail == f"role {role} cannot change jobs of this team"


def test_a_read_only_server_admin_cannot_change_a_job() -> None:
    with pytest.raises(Forbidden) as refused:
        ensure_can_act(caller(is_admin=True, can_write=False), job(1, owner_id=7))
    assert refused.value.detail == "this token is read-only"


def test_only_a_server_admin_passes_the_server_admin_check() -> None:
    ensure_server_admin(caller(is_admin=True))
    with pytest.raises(Forbidden) as refused:
        ensure_server_admin(caller(STUDIO))
    assert refused.value.detail == "only a server admin may do this"


def test_hosts_are_managed_by_writing_server_admins_and_admins_of_any_team() -> None:
    assert can_manage_hosts(caller(is_admin=True))
    assert can_manage_hosts(caller(LAB, STUDIO))
    assert not can_manage_hosts(caller(LAB))
    assert not can_manage_hosts(caller(STUDIO, can_write=False))
    assert not can_manage_hosts(caller(is_admin=True, can_write=False))


def test_the_sql_visibility_binds_carry_the_caller_s_admin_flag_teams_and_id() -> None:
    assert visibility(caller(LAB, STUDIO)) == {"is_admin": False, "team_ids": [1, 2], "user_id": 7}
    assert visibility(caller(is_admin=True))["is_admin"] is True


def test_a_job_or_team_outside_the_caller_s_reach_is_not_found_by_its_id(harness: Harness) -> None:
    """The same words as for an id that does not exist, naming the id asked for."""
    harness.add_user("lena", "lab", "admin")
    with harness.session() as session:
        lab = session.scalars(select(Team).where(Team.name == "lab")).one()
        outsider = caller(TeamRole(lab.id + 1, "studio", "admin"))
        with pytest.raises(NotFound) as refused:
            get_visible_job(session, outsider, 424242)
        assert refused.value.detail == "job 424242 not found"
        with pytest.raises(NotFound) as refused:
            visible_team(session, outsider, lab.id)
        assert refused.value.detail == f"team {lab.id} not found"


def test_a_member_who_may_see_a_team_may_not_manage_it_and_is_told_whose_job_that_is(harness: Harness) -> None:
    harness.add_user("lena", "lab", "admin")
    with harness.session() as session:
        lab = session.scalars(select(Team).where(Team.name == "lab")).one()
        member = caller(TeamRole(lab.id, "lab", "member"))
        assert visible_team(session, member, lab.id) == lab
        with pytest.raises(Forbidden) as refused:
            ensure_team_admin(session, member, lab.id)
        assert refused.value.detail == "only an admin of team 'lab' may do this"
        assert ensure_team_admin(session, caller(TeamRole(lab.id, "lab", "admin")), lab.id) == lab
