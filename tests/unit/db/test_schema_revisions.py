"""This checkout's schema revisions, read from the migration files without Alembic, are Alembic's own."""

from __future__ import annotations

from alembic.config import Config
from alembic.script import ScriptDirectory

from db.session import MIGRATIONS, schema_revisions


def test_the_heads_and_revisions_read_from_the_files_are_alembics() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    script = ScriptDirectory.from_config(config)
    heads, known = schema_revisions()
    assert heads == set(script.get_heads())
    assert known == {revision.revision for revision in script.walk_revisions()}
    assert len(known) >= 12  # every migration file was read, not only the newest
