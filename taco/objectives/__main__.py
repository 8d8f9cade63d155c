"""``python -m taco.objectives``: list the objectives, or ``--schema`` print the config schema's
``pretrain.<group>`` properties derived from the option declarations (the workflow adds them to
``workflow/schemas/config.schema.yaml`` itself: :func:`taco.workflow.schema.workflow_schema`)."""

import sys

import yaml

from taco.objectives import OBJECTIVE_SPECS, schema_sections

if "--schema" in sys.argv[1:]:
    print(yaml.safe_dump(schema_sections(), sort_keys=False, width=120))
else:
    for o in OBJECTIVE_SPECS.values():
        print(f"{o.name:18s} {o.label:20s} terms={','.join(o.terms)} options={','.join(o.options) or '-'}")
