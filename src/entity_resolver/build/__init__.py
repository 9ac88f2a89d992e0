"""Build the installation script: one source for the Python installer and CREATE EXTENSION.

Three kinds of source, as in timescale/pgai's extension: ``migrations/``
(incremental, frozen once released), ``sql/`` (idempotent, re-applied on
every install in filename order) and ``plpython/`` (the resolver's modules,
stored as rows of ``plpython_modules`` in import order). The build is a
small pipeline, one module per concern:

=================  ===============================================================
``sources``        reads the sources (and the version, the code digest)
``lexer``          tokens and statements of SQL text (quotes, dollar quotes, comments)
``headers``        the one parser of ``CREATE FUNCTION`` headers
``rendering``      ``{{ token }}`` templates; the build's own SQL in build/sql/
``entry_points``   PL/Python entry points expanded (and checked to be)
``citus``          the distributed flavour: bank functions delegated (and checked to be)
``script``         the script, part by part
``extension``      the extension's control file and scripts (``make extension``)
=================  ===============================================================

``install --distributed`` (a Citus coordinator) runs a flavour of the same
script (``distributed=True``): ``{{ distributed }}`` renders TRUE, the files of
sql/citus/ join sql/'s, and every public function of a bank is delegated to
the node holding the bank (:func:`delegate_bank_functions`). The single-node
script and the extension files are the ``distributed=False`` flavour.

The names below are what the rest of the product and the tests import.
"""

from entity_resolver.build.citus import COORDINATOR_FUNCTIONS, HANDWRITTEN_WRAPPERS, delegate_bank_functions
from entity_resolver.build.errors import BuildError
from entity_resolver.build.extension import extension_files, main, write_extension
from entity_resolver.build.lexer import split_statements
from entity_resolver.build.names import DEFAULT_SCHEMA, EXTENSION, internal_schema, quote_ident
from entity_resolver.build.rendering import INSTALL_LOCK, static_values
from entity_resolver.build.script import Part, script, script_parts
from entity_resolver.build.sources import code_version, data_dir, migrations, module_sources, package_version

__all__ = ["BuildError", "COORDINATOR_FUNCTIONS", "DEFAULT_SCHEMA", "EXTENSION", "HANDWRITTEN_WRAPPERS",
           "INSTALL_LOCK", "Part", "code_version", "data_dir", "delegate_bank_functions", "extension_files",
           "internal_schema", "main", "migrations", "module_sources", "package_version", "quote_ident",
           "script", "script_parts", "split_statements", "static_values", "write_extension"]
