"""The program models: what the policy knows about each program, one model per program.

`registry.py` registers them by name; the families are its sibling modules (core
utilities, files, text, the system, shell builtins, git, network clients, archivers,
package managers, pagers and editors, shells and interpreters, database shells,
containers and cloud CLIs, launchers). `model.py` says what a model declares.
"""
