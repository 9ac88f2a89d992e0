-- entity_resolver 0004: which roles may use which banks (optional isolation).
-- Frozen once released: later changes go into a new numbered file.
--
-- A role bound here and granted the bank-user role (grant_bank_access does
-- both) sees and writes only its bound banks: row-level security policies
-- (sql/grants.sql) read this table. Roles are kept by name, not oid, so that
-- a dump restores the bindings; a binding whose role no longer exists grants
-- nothing.

CREATE TABLE {{ schema }}.bank_roles (
    bank_id text NOT NULL,
    role_name name NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, role_name),
    CONSTRAINT bank_roles_bank_id_length CHECK (char_length(bank_id) BETWEEN 1 AND 100)
);

-- The policies look bindings up by role.
CREATE INDEX bank_roles_role_idx
ON {{ schema }}.bank_roles (role_name, bank_id);

COMMENT ON TABLE {{ schema }}.bank_roles IS
'Bank isolation: a member of the bank-user role sees only the banks bound here to a role it has the privileges of.';
COMMENT ON COLUMN {{ schema }}.bank_roles.bank_id IS
'The bank (need not exist yet: the bound role may create it on first use).';
COMMENT ON COLUMN {{ schema }}.bank_roles.role_name IS
'The bound role, by name; members of it (with INHERIT) share the binding.';
COMMENT ON COLUMN {{ schema }}.bank_roles.granted_at IS 'When the binding was made.';
