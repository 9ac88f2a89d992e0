"""Rules of Citus 13 that the distributed design of entity_resolver rests on.

Each test shows one rule on a table of two columns, so that a change in a
later Citus release shows up here first, apart from entity_resolver's code.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from citus_helpers import new_database
from psycopg import sql


@pytest.fixture(scope="module")
def rules_dsn(citus) -> Iterator[str]:
    # One Citus database for the module: each test works in a schema of its own.
    yield from new_database(citus)


@pytest.fixture
def connect(rules_dsn: str) -> Iterator[Callable[..., psycopg.Connection]]:
    """Sessions whose search_path is a schema of this test's own (dropped afterwards).

    A delegated call runs with the worker connection's search_path, not the
    caller's: a function reading a table by an unqualified name pins its
    own (SET search_path FROM CURRENT), as entity_resolver's functions do.
    """
    schema = f"rules_{uuid.uuid4().hex[:10]}"
    opened: list[psycopg.Connection] = []

    def _connect(**kwargs) -> psycopg.Connection:
        conn = psycopg.connect(rules_dsn, autocommit=True, options=f"-c search_path={schema}", **kwargs)
        opened.append(conn)
        return conn

    _connect().execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    yield _connect
    for conn in opened:
        conn.close()
    with psycopg.connect(rules_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def coordinator(connect) -> psycopg.Connection:
    return connect()


@pytest.fixture
def t(coordinator):
    """Table t (k text, v int) distributed by k over 4 shards; returns a key on each worker."""
    coordinator.execute("CREATE TABLE t (k text PRIMARY KEY, v int)")
    coordinator.execute("SELECT create_distributed_table('t', 'k', shard_count => 4)")
    keys: dict[int, list[str]] = {}
    for n in range(200):
        port = coordinator.execute(
            "SELECT nodeport FROM pg_dist_shard_placement"
            " WHERE shardid = get_shard_id_for_distribution_column('t', %s::text)", (f"k{n}",)).fetchone()[0]
        keys.setdefault(port, []).append(f"k{n}")
    return keys


def delegate(conn, signature: str, force: bool = False) -> None:
    conn.execute("SELECT create_distributed_function(%s, 'k', colocate_with => 't', force_delegation => %s)",
                 (signature, force))


PORT_FN = "CREATE FUNCTION {name}(k text) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN inet_server_port(); END $$"


def test_a_policy_with_a_subquery_is_refused_before_and_after_distribution(coordinator):
    coordinator.execute("CREATE TABLE bindings (k text, role_name name)")
    coordinator.execute("CREATE TABLE p (k text PRIMARY KEY)")
    coordinator.execute("ALTER TABLE p ENABLE ROW LEVEL SECURITY")
    policy = "CREATE POLICY bound ON p USING (k IN (SELECT b.k FROM bindings AS b WHERE b.role_name = current_user))"
    coordinator.execute(policy)
    with pytest.raises(psycopg.errors.FeatureNotSupported) as error:
        coordinator.execute("SELECT create_distributed_table('p', 'k')")
    assert error.value.diag.message_detail == "Subqueries are not supported in policies on distributed tables"
    coordinator.execute("DROP POLICY bound ON p")
    coordinator.execute("SELECT create_distributed_table('p', 'k')")
    with pytest.raises(psycopg.errors.InternalError, match="unexpected non-SELECT command in SubLink"):
        coordinator.execute(policy)


def test_a_policy_function_reading_a_table_fails_on_the_shards(coordinator, t):
    # Hiding the subquery in a function passes CREATE POLICY, but the function
    # then runs a distributed query inside a query on a shard.
    coordinator.execute("CREATE TABLE bindings (k text, role_name name, PRIMARY KEY (k, role_name))")
    coordinator.execute("SELECT create_reference_table('bindings')")
    coordinator.execute(
        "CREATE FUNCTION visible() RETURNS text[] LANGUAGE sql STABLE SET search_path FROM CURRENT AS"
        " $$ SELECT coalesce(array_agg(b.k), '{}') FROM bindings AS b WHERE b.role_name = current_user $$")
    coordinator.execute("ALTER TABLE t ENABLE ROW LEVEL SECURITY")
    coordinator.execute("CREATE POLICY bound ON t USING (k = ANY (visible()))")
    coordinator.execute("CREATE ROLE rules_reader LOGIN")  # workers are reached as the current role
    try:
        coordinator.execute(coordinator.execute(
            "SELECT format('GRANT USAGE ON SCHEMA %I TO rules_reader', current_schema())").fetchone()[0])
        coordinator.execute("GRANT SELECT ON t, bindings TO rules_reader")
        coordinator.execute("SET ROLE rules_reader")
        with pytest.raises(psycopg.errors.InternalError, match="cannot execute a distributed query from a query on a shard"):
            coordinator.execute("SELECT * FROM t")
    finally:
        coordinator.execute("RESET ROLE")
        coordinator.execute("DROP OWNED BY rules_reader")
        coordinator.execute("DROP ROLE rules_reader")


def test_a_role_membership_policy_isolates_rows_on_the_coordinator_and_on_workers(citus, coordinator, t):
    # A predicate that reads only catalogs is allowed on a distributed table
    # and is evaluated on every shard. Roles and role grants are propagated.
    on_first, on_second = (t[w.port][0] for w in citus.workers)
    coordinator.execute("INSERT INTO t VALUES (%s, 1), (%s, 2)", (on_first, on_second))
    coordinator.execute(
        "CREATE FUNCTION may_use(k text) RETURNS boolean LANGUAGE sql STABLE AS $$"
        " SELECT coalesce((SELECT pg_catalog.pg_has_role(r.oid, 'USAGE') FROM pg_catalog.pg_roles AS r"
        " WHERE r.rolname = 'rules_key_' || k), false) $$")
    coordinator.execute("ALTER TABLE t ENABLE ROW LEVEL SECURITY")
    coordinator.execute("CREATE POLICY bound ON t USING (may_use(k)) WITH CHECK (may_use(k))")
    key_role = sql.Identifier(f"rules_key_{on_first}")
    coordinator.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(key_role))
    coordinator.execute("CREATE ROLE rules_user LOGIN")
    try:
        coordinator.execute(sql.SQL("GRANT {} TO rules_user").format(key_role))
        coordinator.execute("GRANT SELECT, INSERT ON t TO rules_user")
        schema = coordinator.execute("SELECT current_schema()").fetchone()[0]
        coordinator.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO rules_user").format(sql.Identifier(schema)))
        dbname = coordinator.info.dbname
        path = f"-c search_path={schema}"
        for node in citus.nodes:
            with psycopg.connect(node.dsn(dbname), user="rules_user", options=path) as conn:
                assert conn.execute("SELECT k FROM t ORDER BY k").fetchall() == [(on_first,)]
                assert conn.execute("SELECT k FROM t WHERE k = %s", (on_second,)).fetchall() == []
        with psycopg.connect(citus.dsn(dbname), user="rules_user", options=path) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute("INSERT INTO t VALUES (%s, 3)", (t[citus.workers[1].port][1],))
    finally:
        coordinator.execute("DROP OWNED BY rules_user")
        coordinator.execute("DROP ROLE rules_user")
        coordinator.execute(sql.SQL("DROP ROLE {}").format(key_role))


def test_a_table_with_triggers_is_distributed_only_with_unsafe_triggers(coordinator):
    coordinator.execute("CREATE TABLE trg (k text PRIMARY KEY)")
    coordinator.execute(
        "CREATE FUNCTION noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$")
    coordinator.execute(
        "CREATE TRIGGER trg_stmt AFTER INSERT ON trg REFERENCING NEW TABLE AS n"
        " FOR EACH STATEMENT EXECUTE FUNCTION noop()")
    with pytest.raises(psycopg.errors.InternalError, match='cannot distribute relation "trg" because it has triggers'):
        coordinator.execute("SELECT create_distributed_table('trg', 'k')")
    coordinator.execute("SET citus.enable_unsafe_triggers = on")
    coordinator.execute("SELECT create_distributed_table('trg', 'k')")
    coordinator.execute("INSERT INTO trg VALUES ('a'), ('b')")


def test_ddl_on_a_distributed_table_must_be_one_statement_per_query_string(coordinator, t):
    # Citus sends a table's DDL to its shards as the query string it came
    # in; a string of several statements is refused there. In a DO block,
    # each statement has a query string of its own.
    with pytest.raises(psycopg.errors.SyntaxError, match="cannot insert multiple commands into a prepared statement"):
        coordinator.execute("ALTER TABLE t ALTER COLUMN v SET DEFAULT 0; SELECT 1")
    coordinator.execute("DO $$ BEGIN ALTER TABLE t ALTER COLUMN v SET DEFAULT 0;"
                        " ALTER TABLE t ALTER COLUMN v DROP DEFAULT; END $$")


def test_calls_in_a_transaction_block_are_delegated_only_with_force_delegation(citus, coordinator, t):
    coordinator.execute(PORT_FN.format(name="plain"))
    coordinator.execute(PORT_FN.format(name="forced"))
    delegate(coordinator, "plain(text)")
    delegate(coordinator, "forced(text)", force=True)
    key = t[citus.workers[0].port][0]
    assert coordinator.execute("SELECT plain(%s)", (key,)).fetchone()[0] == citus.workers[0].port
    with coordinator.transaction():
        assert coordinator.execute("SELECT plain(%s)", (key,)).fetchone()[0] == citus.coordinator.port
        assert coordinator.execute("SELECT forced(%s)", (key,)).fetchone()[0] == citus.workers[0].port
        # Keys on other workers in the same transaction: each call goes to its worker.
        other = t[citus.workers[1].port][0]
        assert coordinator.execute("SELECT forced(%s)", (other,)).fetchone()[0] == citus.workers[1].port


def test_a_checking_wrapper_delegates_through_a_forced_function(citus, coordinator, t):
    # Citus 13.2.2 crashes the coordinator when a delegated call's
    # distribution argument is NULL (see test_delegation). A wrapper that is
    # not distributed can reject NULL first; a call it makes in FROM to a
    # force-delegated function still runs on the key's worker.
    coordinator.execute(
        "CREATE FUNCTION _where(k text) RETURNS TABLE (port int) LANGUAGE plpgsql AS"
        " $$ BEGIN RETURN QUERY SELECT inet_server_port(); END $$")
    delegate(coordinator, "_where(text)", force=True)
    coordinator.execute(
        "CREATE FUNCTION where_is(k text) RETURNS TABLE (port int) LANGUAGE plpgsql AS $$ BEGIN"
        " IF k IS NULL THEN RAISE EXCEPTION 'k: must not be null' USING ERRCODE = 'null_value_not_allowed';"
        " END IF; RETURN QUERY SELECT * FROM _where(k); END $$")
    for worker in citus.workers:
        assert coordinator.execute("SELECT * FROM where_is(%s)", (t[worker.port][0],)).fetchone()[0] == worker.port
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="k: must not be null"):
        coordinator.execute("SELECT * FROM where_is(%s)", (None,))


def test_a_delegated_call_runs_in_the_workers_own_transaction(citus, coordinator, t):
    # pg_current_xact_id() is per node: a value written by a delegated call
    # means nothing on the coordinator or on another worker.
    coordinator.execute(
        "CREATE FUNCTION xid(k text) RETURNS TABLE (port int, xid xid8) LANGUAGE plpgsql AS"
        " $$ BEGIN RETURN QUERY SELECT inet_server_port(), pg_current_xact_id(); END $$")
    delegate(coordinator, "xid(text)", force=True)
    worker = citus.workers[0]
    with coordinator.transaction():
        port, worker_xid = coordinator.execute("SELECT * FROM xid(%s)", (t[worker.port][0],)).fetchone()
        assert port == worker.port
        # While the distributed transaction is open, a backend of the worker
        # holds that id as its own transaction id.
        with psycopg.connect(worker.dsn(coordinator.info.dbname)) as conn:
            holders = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_xid::text = %s::text",
                (str(worker_xid),)).fetchone()[0]
        assert holders == 1


def test_advisory_locks_in_delegated_calls_are_per_node(citus, connect, t):
    first, second = citus.workers
    setup = connect()
    setup.execute(
        "CREATE FUNCTION locked(k text) RETURNS int LANGUAGE plpgsql AS"
        " $$ BEGIN PERFORM pg_advisory_xact_lock(42); RETURN inet_server_port(); END $$")
    delegate(setup, "locked(text)", force=True)
    holder, other = connect(), connect()
    other.execute("SET statement_timeout = '3s'")
    with holder.transaction():
        assert holder.execute("SELECT locked(%s)", (t[first.port][0],)).fetchone()[0] == first.port
        # The same key on the other worker, and on the coordinator: free.
        assert other.execute("SELECT locked(%s)", (t[second.port][0],)).fetchone()[0] == second.port
        assert other.execute("SELECT pg_try_advisory_lock(42)").fetchone()[0] is True
        other.execute("SELECT pg_advisory_unlock(42)")
        # Another bank on the first worker waits for it.
        other.execute("SET statement_timeout = '300ms'")
        with pytest.raises(psycopg.errors.QueryCanceled):
            other.execute("SELECT locked(%s)", (t[first.port][1],))


def test_lock_timeout_is_not_forwarded_to_a_delegated_call_but_statement_timeout_cancels_it(citus, connect, t):
    worker = citus.workers[0]
    setup = connect()
    setup.execute(
        "CREATE FUNCTION locked(k text) RETURNS int LANGUAGE plpgsql AS"
        " $$ BEGIN PERFORM pg_advisory_xact_lock(7); RETURN inet_server_port(); END $$")
    delegate(setup, "locked(text)", force=True)
    holder, waiter = connect(), connect()
    waiter.execute("SET lock_timeout = '100ms'")
    waiter.execute("SET statement_timeout = '1500ms'")
    with holder.transaction():
        holder.execute("SELECT locked(%s)", (t[worker.port][0],))
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled) as error:
            waiter.execute("SELECT locked(%s)", (t[worker.port][1],))
        assert "statement timeout" in error.value.diag.message_primary
        assert time.monotonic() - started >= 1.4
        # SET LOCAL in a transaction block reaches the worker when Citus is
        # told to propagate it.
        waiter.execute("SET citus.propagate_set_commands = 'local'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            with waiter.transaction():
                waiter.execute("SET LOCAL lock_timeout = '100ms'")
                waiter.execute("SELECT locked(%s)", (t[worker.port][1],))


def test_identity_values_come_from_the_node_that_inserts(citus, coordinator, t):
    # Each node draws from its own range (group id << 48), so ids are unique
    # cluster-wide but order rows only among those inserted on one node.
    coordinator.execute("CREATE TABLE q (k text NOT NULL, id bigint GENERATED ALWAYS AS IDENTITY,"
                        " PRIMARY KEY (k, id))")
    coordinator.execute("SELECT create_distributed_table('q', 'k', colocate_with => 't')")
    coordinator.execute(
        "CREATE FUNCTION enqueue(k text) RETURNS bigint LANGUAGE plpgsql SET search_path FROM CURRENT AS"
        " $$ DECLARE i bigint; BEGIN INSERT INTO q (k) VALUES (k) RETURNING id INTO i; RETURN i; END $$")
    delegate(coordinator, "enqueue(text)", force=True)
    worker = citus.workers[1]
    key = t[worker.port][0]
    group = coordinator.execute("SELECT groupid FROM pg_dist_node WHERE nodeport = %s", (worker.port,)).fetchone()[0]
    on_worker = coordinator.execute("SELECT enqueue(%s)", (key,)).fetchone()[0]
    on_coordinator = coordinator.execute("INSERT INTO q (k) VALUES (%s) RETURNING id", (key,)).fetchone()[0]
    assert on_worker >> 48 == group
    assert on_coordinator < 1 << 48
    assert on_coordinator < on_worker


def test_a_strict_function_called_with_a_null_key_is_folded_away_before_delegation(citus, coordinator, t):
    # What the generated <name>_delegated functions rest on: the planner
    # replaces a STRICT function of a NULL constant by NULL before Citus
    # plans the delegation (which crashes on a NULL key, citusdata/citus#7242).
    coordinator.execute(
        "CREATE FUNCTION strict_port(k text, args jsonb) RETURNS jsonb LANGUAGE plpgsql STRICT AS"
        " $$ BEGIN RETURN to_jsonb(inet_server_port()); END $$")
    delegate(coordinator, "strict_port(text, jsonb)", force=True)
    key = t[citus.workers[0].port][0]
    assert coordinator.execute("SELECT r FROM strict_port(%s, '{}') AS r", (key,)).fetchone()[0] == citus.workers[0].port
    for _ in range(7):  # past the plan cache's fifth execution
        assert coordinator.execute("SELECT strict_port(%s, '{}')", (None,)).fetchone()[0] is None
        assert coordinator.execute("SELECT r FROM strict_port(%s, '{}') AS r", (None,)).fetchone()[0] is None
    with coordinator.transaction():
        assert coordinator.execute("SELECT r FROM strict_port(NULL, '{}') AS r").fetchone()[0] is None
    assert coordinator.execute("SELECT 1").fetchone()[0] == 1


def test_a_correlated_subquery_in_the_select_list_is_routed_only_by_a_constant_key(coordinator, t):
    # A subquery of the SELECT list joined to the outer row on the key makes
    # a query of every shard; filtered on the key's value, it stays on one.
    coordinator.execute("CREATE TABLE u (k text, w int)")
    coordinator.execute("SELECT create_distributed_table('u', 'k', colocate_with => 't')")

    def tasks(query: str) -> str:
        plan = "\n".join(r[0] for r in coordinator.execute("EXPLAIN " + query))
        return plan.split("Task Count: ", 1)[1].split("\n", 1)[0]

    assert tasks("SELECT t.v, (SELECT count(*) FROM u WHERE u.k = t.k) FROM t WHERE t.k = 'x'") == "4"
    assert tasks("SELECT t.v, (SELECT count(*) FROM u WHERE u.k = 'x') FROM t WHERE t.k = 'x'") == "1"
    assert tasks("SELECT t.v FROM t WHERE t.k = 'x' AND EXISTS (SELECT 1 FROM u WHERE u.k = t.k)") == "1"
