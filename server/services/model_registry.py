"""The model registry: a team's named models, versions registered from its jobs' checkpoints, and aliases.

Who may do what follows server.services.scoping: every member of a model's team reads it; members and admins
register versions and set, move and delete aliases; a read-only token only reads. A model of a team the caller
is not in is not found, like a job. Registering reads the job as the caller sees it: a job they cannot see is
refused as missing, naming `job_id`.

A name is unique in its team, not across teams: a caller in two teams that both have the name chooses with
`team` (the API's `?team=`)."""

from __future__ import annotations

import re

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.models import Artifact, Job, ModelAlias, ModelVersion, RegisteredModel, Team, utcnow
from server.schemas.model_registry import (
    ALIAS_MAX_LENGTH,
    ALIAS_PATTERN,
    ALIAS_RULE,
    Lineage,
    ModelAliasOut,
    ModelDetail,
    ModelDownload,
    ModelList,
    ModelOut,
    ModelRegister,
    ModelVersionOut,
    VersionExport,
)
from server.services import audit
from server.services.auth import Caller
from server.services.errors import Conflict, FieldErrors, Forbidden, NotFound
from server.services.latest_versions import with_latest_versions
from server.services.model_lineage import lineage_of
from server.services.named_in_team import visible_by_name
from server.services.scoping import SUBMIT_ROLES, ensure_writer, scope_jobs, team_role
from server.services.task_jobs import CHECKPOINT_KINDS, checkpoint_artifact
from server.services.usernames import usernames

EXPORT = "export"


def artifact_download_url(job_id: int, artifact_id: int) -> str:
    return f"/api/v1/jobs/{job_id}/artifacts/{artifact_id}/download"


def _ensure_registrar(caller: Caller, team: Team, doing: str) -> None:
    """Registering and moving aliases: members and admins of the team, and server admins."""
    ensure_writer(caller)
    role = team_role(caller, team.id)
    if not caller.is_admin and role not in SUBMIT_ROLES:
        raise Forbidden(f"role {role!r} in team {team.name!r} cannot {doing}; ask a member or an admin")


# -- registering --------------------------------------------------------------------------------------------


def _registered_job(session: Session, caller: Caller, job_id: int) -> tuple[Job, Team]:
    job = session.scalar(scope_jobs(select(Job).where(Job.id == job_id), caller))
    if job is None:
        raise FieldErrors.one("job_id", f"job {job_id} not found")
    team = session.get(Team, job.team_id) if job.team_id is not None else None
    if team is None:
        raise FieldErrors.one("job_id", f"job {job_id} belongs to no team; a model is registered in its job's team")
    return job, team


def _checkpoint(session: Session, job: Job, body: ModelRegister) -> Artifact:
    """The checkpoint the body names: its artifact, or the job's at its step (services.task_jobs, as exports and
    evaluations choose one), or without either the job's final model or latest checkpoint."""
    if body.artifact_id is None:
        return checkpoint_artifact(session, job, body.step, field="job_id" if body.step is None else "step")
    if body.step is not None:
        raise FieldErrors.one("artifact_id", "give step or artifact_id, not both")
    artifact = session.get(Artifact, body.artifact_id)
    if artifact is None or artifact.job_id != job.id or artifact.kind not in CHECKPOINT_KINDS or artifact.step is None:
        raise FieldErrors.one("artifact_id", f"no checkpoint artifact {body.artifact_id} in job {job.id}")
    return artifact


def register_version(session: Session, caller: Caller, body: ModelRegister) -> ModelVersionOut:
    """The job's checkpoint as the next version of the model (made on its first version), with its lineage now;
    audited as model.register. Commits."""
    ensure_writer(caller)
    job, team = _registered_job(session, caller, body.job_id)
    _ensure_registrar(caller, team, "register models")
    checkpoint = _checkpoint(session, job, body)
    assert checkpoint.step is not None  # checkpoints with a step only
    model = session.scalar(
        select(RegisteredModel).where(RegisteredModel.team_id == team.id, RegisteredModel.name == body.name)
    )
    if model is None:
        model = RegisteredModel(team_id=team.id, name=body.name, created_by=caller.user_id)
        session.add(model)
        session.flush()
    if body.description is not None:
        model.description = body.description
    latest = session.scalar(select(func.max(ModelVersion.version)).where(ModelVersion.model_id == model.id))
    version = ModelVersion(
        model_id=model.id,
        version=(latest or 0) + 1,
        job_id=job.id,
        artifact_id=checkpoint.id,
        step=checkpoint.step,
        created_by=caller.user_id,
        lineage=lineage_of(session, job, checkpoint.step).model_dump(mode="json"),
    )
    session.add(version)
    detail = f"{model.name} version {version.version}: job {job.id} checkpoint {checkpoint.id} at step {version.step}"
    audit.record(session, "model.register", caller, team_id=team.id, job_id=job.id, detail=detail)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"model {body.name!r} of team {team.name!r} changed meanwhile; register again") from None
    return _versions(session, model, team, [version])[0]


# -- reading ------------------------------------------------------------------------------------------------


def visible_model(session: Session, caller: Caller, name: str, team: str | None = None) -> tuple[RegisteredModel, Team]:
    """The model called `name` in the caller's teams (server admins: any team), in `team` when given."""
    return visible_by_name(session, caller, RegisteredModel, "model", name, team)


def _aliases(session: Session, model_ids: list[int]) -> dict[int, list[ModelAliasOut]]:
    rows = session.execute(
        select(ModelAlias, ModelVersion.version)
        .join(ModelVersion, ModelVersion.id == ModelAlias.version_id)
        .where(ModelAlias.model_id.in_(model_ids))
        .order_by(ModelAlias.name)
    )
    found = list(rows)
    names = usernames(session, (a.updated_by for a, _ in found))
    out: dict[int, list[ModelAliasOut]] = {i: [] for i in model_ids}
    for alias, version in found:
        out[alias.model_id].append(
            ModelAliasOut(
                name=alias.name,
                version=version,
                updated_by=names.get(alias.updated_by or 0),
                updated_at=alias.updated_at,
            )
        )
    return out


def _exports(session: Session, versions: list[ModelVersion]) -> dict[int, dict[str, VersionExport]]:
    """Per version, its export artifacts by format (the newest of each): those of the export jobs that read its
    checkpoint (jobs.source_artifact_id) and the source job's own at its step. Read now, so an export made later
    shows."""
    by_job_step = {(v.job_id, v.step): v.id for v in versions}
    by_checkpoint = {v.artifact_id: v.id for v in versions if v.artifact_id is not None}
    found: list[tuple[int, Artifact]] = []
    own = session.scalars(
        select(Artifact).where(
            Artifact.kind == EXPORT, Artifact.job_id.in_({v.job_id for v in versions if v.job_id is not None})
        )
    )
    found += [(by_job_step[(a.job_id, a.step)], a) for a in own if (a.job_id, a.step) in by_job_step]
    if by_checkpoint:
        tasks = session.execute(
            select(Job.source_artifact_id, Artifact)
            .join(Artifact, Artifact.job_id == Job.id)
            .where(Job.source_artifact_id.in_(by_checkpoint), Artifact.kind == EXPORT)
        )
        found += [(by_checkpoint[source], a) for source, a in tasks if source is not None]
    exports: dict[int, dict[str, VersionExport]] = {v.id: {} for v in versions}
    for version_id, artifact in sorted(found, key=lambda pair: pair[1].id):
        exports[version_id][artifact.name] = VersionExport(
            format=artifact.name,
            job_id=artifact.job_id,
            artifact_id=artifact.id,
            url=artifact_download_url(artifact.job_id, artifact.id),
        )
    return exports


def _versions(
    session: Session, model: RegisteredModel, team: Team, versions: list[ModelVersion]
) -> list[ModelVersionOut]:
    aliases = _aliases(session, [model.id])[model.id]
    names = usernames(session, (v.created_by for v in versions))
    exports = _exports(session, versions)
    return [
        ModelVersionOut(
            model=model.name,
            team=team.name,
            version=v.version,
            job_id=v.job_id,
            artifact_id=v.artifact_id,
            step=v.step,
            aliases=[a.name for a in aliases if a.version == v.version],
            export_formats=sorted(exports[v.id]),
            exports=[exports[v.id][f] for f in sorted(exports[v.id])],
            created_by=names.get(v.created_by or 0),
            created_at=v.created_at,
            lineage=Lineage.model_validate(v.lineage),
        )
        for v in versions
    ]


def _model_out(
    model: RegisteredModel, team: Team, latest: int | None, aliases: list[ModelAliasOut], names: dict[int, str]
) -> ModelOut:
    return ModelOut(
        name=model.name,
        team=team.name,
        description=model.description,
        created_by=names.get(model.created_by or 0),
        created_at=model.created_at,
        latest_version=latest,
        aliases=aliases,
    )


def list_models(session: Session, caller: Caller, team: str | None = None) -> ModelList:
    """The models of the caller's teams (of `team` when given), by team then name."""
    rows = with_latest_versions(session, caller, RegisteredModel, ModelVersion.model_id, ModelVersion.version, team)
    aliases = _aliases(session, [m.id for m, _, _ in rows])
    names = usernames(session, (m.created_by for m, _, _ in rows))
    return ModelList(items=[_model_out(m, t, v, aliases[m.id], names) for m, t, v in rows])


def model_detail(session: Session, caller: Caller, name: str, team: str | None = None) -> ModelDetail:
    model, owner = visible_model(session, caller, name, team)
    versions = list(
        session.scalars(
            select(ModelVersion).where(ModelVersion.model_id == model.id).order_by(ModelVersion.version.desc())
        )
    )
    shown = _versions(session, model, owner, versions)
    summary = _model_out(
        model,
        owner,
        versions[0].version if versions else None,
        _aliases(session, [model.id])[model.id],
        usernames(session, [model.created_by]),
    )
    return ModelDetail(**summary.model_dump(), versions=shown)


def _version_row(session: Session, model: RegisteredModel, number: int) -> ModelVersion:
    version = session.scalar(
        select(ModelVersion).where(ModelVersion.model_id == model.id, ModelVersion.version == number)
    )
    if version is None:
        raise NotFound(f"version {number} of model {model.name!r} not found")
    return version


def version_detail(
    session: Session, caller: Caller, name: str, number: int, team: str | None = None
) -> ModelVersionOut:
    model, owner = visible_model(session, caller, name, team)
    return _versions(session, model, owner, [_version_row(session, model, number)])[0]


def version_download(
    session: Session, caller: Caller, name: str, number: int, export_format: str | None, team: str | None = None
) -> ModelDownload:
    """The version's checkpoint artifact, or with `export_format` its export in that format, and its download
    URL (GET /api/v1/jobs/{id}/artifacts/{aid}/download)."""
    model, _ = visible_model(session, caller, name, team)
    version = _version_row(session, model, number)
    if export_format is None:
        artifact = session.get(Artifact, version.artifact_id) if version.artifact_id is not None else None
        if artifact is None:
            raise NotFound(f"the checkpoint of version {number} of model {model.name!r} is no longer held")
    else:
        artifact = _export(session, version, export_format)
    return ModelDownload(
        job_id=artifact.job_id,
        artifact_id=artifact.id,
        kind=artifact.kind,
        name=artifact.name,
        step=artifact.step,
        url=artifact_download_url(artifact.job_id, artifact.id),
    )


def _export(session: Session, version: ModelVersion, export_format: str) -> Artifact:
    """The version's export in `export_format`; 422 naming `format` with those it has."""
    exports = _exports(session, [version])[version.id]
    if export_format not in exports:
        have = ", ".join(sorted(exports)) or "none"
        raise FieldErrors.one("format", f"no {export_format!r} export of this version; its exports: {have}")
    return session.get_one(Artifact, exports[export_format].artifact_id)


# -- aliases ------------------------------------------------------------------------------------------------


def set_alias(
    session: Session, caller: Caller, name: str, alias: str, number: int, team: str | None = None
) -> ModelAliasOut:
    """Point `alias` at version `number` (making it, or moving it from another version); audited as model.alias
    with the versions it moved from and to. Commits."""
    ensure_writer(caller)
    model, owner = visible_model(session, caller, name, team)
    _ensure_registrar(caller, owner, "move aliases")
    if not re.fullmatch(ALIAS_PATTERN, alias) or len(alias) > ALIAS_MAX_LENGTH:
        raise FieldErrors.one("alias", f"{alias!r}: {ALIAS_RULE}")
    try:
        version = _version_row(session, model, number)
    except NotFound as exc:
        raise FieldErrors.one("version", str(exc.detail)) from None
    row = session.scalar(select(ModelAlias).where(ModelAlias.model_id == model.id, ModelAlias.name == alias))
    before = session.get(ModelVersion, row.version_id) if row is not None else None
    if row is None:
        row = ModelAlias(model_id=model.id, name=alias)
        session.add(row)
    row.version_id, row.updated_by, row.updated_at = version.id, caller.user_id, utcnow()
    _audit_alias(session, caller, model, owner, alias, before, version)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"alias {alias!r} of model {model.name!r} changed meanwhile; set it again") from None
    return ModelAliasOut(name=alias, version=version.version, updated_by=caller.username, updated_at=row.updated_at)


def delete_alias(session: Session, caller: Caller, name: str, alias: str, team: str | None = None) -> None:
    """Remove `alias`; audited as model.alias, from its version to none. Commits."""
    ensure_writer(caller)
    model, owner = visible_model(session, caller, name, team)
    row = session.scalar(select(ModelAlias).where(ModelAlias.model_id == model.id, ModelAlias.name == alias))
    if row is None:
        raise NotFound(f"alias {alias!r} of model {model.name!r} not found")
    _ensure_registrar(caller, owner, "move aliases")
    _audit_alias(session, caller, model, owner, alias, session.get(ModelVersion, row.version_id), None)
    session.delete(row)
    session.commit()


def _audit_alias(
    session: Session,
    caller: Caller,
    model: RegisteredModel,
    team: Team,
    alias: str,
    before: ModelVersion | None,
    after: ModelVersion | None,
) -> None:
    def shown(v: ModelVersion | None) -> str:
        return f"version {v.version}" if v is not None else "none"

    detail = f"{model.name}@{alias}: {shown(before)} -> {shown(after)}"
    job_id = after.job_id if after is not None else None
    audit.record(session, "model.alias", caller, team_id=team.id, job_id=job_id, detail=detail)
