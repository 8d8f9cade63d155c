# TACO reproduction: corpus -> tokenizer -> packed blocks -> pre-training segments per budget
# -> GLUE fine-tuning (checkpoint x task x seed) -> statistics -> tables, figures, claims.
# The science lives in the `taco` package; rules only name files and call `taco <command>`.

import socket
from snakemake.utils import min_version, validate

min_version("9.0")


report: "workflow/report/workflow.rst"


# The paper's grid is the default; `--configfile other.yaml` replaces it instead of being merged into it.
if not config:

    configfile: "config.yaml"


# The project's own schema check first: each bad key with its value and what is allowed, one line each
# (Snakemake's validate prints the whole schema around the first one); validate then fills the defaults.
# Each line naming a key starts with the file and line that set it (taco.workflow.config_source).
from snakemake.exceptions import WorkflowError
from taco.workflow.config_source import config_file_errors, key_sources
from taco.workflow.schema import SchemaError, check_schema, schema_file

if config_file_errors(workflow.configfiles):
    raise WorkflowError("Invalid configuration files:\n  " + "\n  ".join(config_file_errors(workflow.configfiles)))
try:
    check_schema(config, f"{workflow.basedir}/workflow/schemas/config.schema.yaml")
except SchemaError as _schema_err:
    _where = key_sources(workflow.configfiles, workflow.config_settings.config)
    raise WorkflowError(f"Invalid configuration: {_where.annotate(str(_schema_err))}") from None
validate(config, str(schema_file(f"{workflow.basedir}/workflow/schemas/config.schema.yaml")))


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/pretrain.smk"
include: "workflow/rules/tuning.smk"
include: "workflow/rules/control.smk"
include: "workflow/rules/finetune.smk"
include: "workflow/rules/finetune_tuning.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/plan.smk"
include: "workflow/rules/submission.smk"
include: "workflow/rules/curves.smk"


rule all:
    default_target: True
    input:
        all_targets(),
        f"{R}/plan.md",
        submission_targets(),
        f"{R}/pretrain_curves.png",
        f"{R}/efficiency.md",
        f"{R}/efficiency.png",


# One fork server per local run (taco.launch.forkserver, config fork_server): torch and transformers are
# imported once and every CPU job forks from it; never on a cluster executor or with --use-conda.
FORK_SERVER = []


# The results folder is locked for the run (taco.workflow.results_lock): a second run on the same folder from
# another working directory would delete this one's outputs when its jobs fail. `snakemake --unlock` clears it.
if "--unlock" in sys.argv and workflow.is_main_process:
    from taco.workflow.results_lock import ResultsLockError, clear as _clear_lock

    try:
        _removed = _clear_lock(R)
    except ResultsLockError as _err:
        raise WorkflowError(str(_err)) from None
    if _removed is not None:
        _where = "" if _removed.get("host") == socket.gethostname() else (
            f" (it was taken on host {_removed.get('host', '?')}, which this host cannot check)")
        print(f"Removed the results folder's lock {R}/.taco-run.lock{_where}", file=sys.stderr)
elif workflow.is_main_process and any(a in ("-n", "--dry-run", "--dryrun") or (a[:1] == "-" and a[1:2] != "-" and
                                      "n" in a[1:] and a[1:].isalpha() and len(a) <= 4) for a in sys.argv[1:]):
    # a dry run (the executor, and with it workflow.dryrun, is not set up while the Snakefile is read)
    from taco.workflow.results_lock import live_holder

    _live = live_holder(R)
    if _live is not None:
        print(f"taco: note: the results folder {R} is in use by a running run (pid {_live.get('pid')}, working "
              f"directory {_live.get('workdir', '?')}); a real run here would stop before any job", file=sys.stderr)
RESULTS_LOCK = []


onstart:
    if workflow.is_main_process and not workflow.dryrun and not workflow.touch:
        from taco.workflow.config_checks import multi_node_refusal
        from taco.workflow.results_lock import ResultsLockError, acquire

        _refusal = multi_node_refusal(config, workflow.local_exec)
        if _refusal:
            raise WorkflowError(f"Invalid configuration: {_refusal}")
        try:
            RESULTS_LOCK.append(acquire(R))
        except ResultsLockError as _err:
            raise WorkflowError(str(_err)) from None
    if (config["fork_server"] and workflow.local_exec and workflow.is_main_process and not USE_CONDA
            and not workflow.dryrun and not workflow.touch):
        from taco.launch.forkserver import start

        os.makedirs(f"{R}/logs", exist_ok=True)
        FORK_SERVER.append(start(f"{R}/logs/forkserver.log"))
    if workflow.is_main_process and not workflow.dryrun and not workflow.touch:
        # the time left after each "N of M steps done" line (taco.workflow.progress)
        import logging as _logging
        from taco.workflow.progress import ProgressHandler

        _quiet = {str(q).lower() for q in (getattr(workflow.output_settings, "quiet", None) or ())}
        if not _quiet & {"progress", "all", "quietness.progress", "quietness.all"}:
            _logging.getLogger("snakemake.logging").addHandler(ProgressHandler(workflow.dag.stats()[1]))


# At the end of a successful run: where the results are, the claims' verdicts, degenerate runs and the
# report command (taco.workflow.summary; absent files of a partial run are named, never an error).
onsuccess:
    from taco.launch.forkserver import stop
    from taco.workflow.summary import print_summary

    for _server in FORK_SERVER:
        stop(_server)
    if RESULTS_LOCK:
        from taco.workflow.results_lock import release

        release(R)
    print_summary(R, workflow.configfiles, workflow.config_settings.config)


onerror:
    from taco.launch.forkserver import stop

    for _server in FORK_SERVER:
        stop(_server)
    if RESULTS_LOCK:
        from taco.workflow.results_lock import release

        release(R)
