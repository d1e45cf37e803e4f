"""Transforms SAM templates into CloudFormation, many in one run.

Usage: transform.py < INPUTS

INPUTS is a JSON array of {"template": YAML text, "codeUri": CODE_URI,
"params": {Name: Value}}; the output, on standard output, is the JSON
array of the CloudFormation templates, in the same order. Every
function's CodeUri becomes CODE_URI (s3://bucket/key), as `sam package`
would make it after uploading the code.

It needs the samtranslator package (installed with cfn-lint) and a region
(AWS_DEFAULT_REGION). A managed policy named without its ARN
(AmazonDynamoDBFullAccess) becomes its ARN from the list of AWS managed
policies that samtranslator bundles; the managed-policy loader, which SAM
asks only for a name that list lacks, knows none.
"""

import json
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    def load(self):
        return {}


def translate(text, code_uri, params):
    template = yaml_parse(text)
    template.setdefault("Globals", {}).setdefault("Function", {})["CodeUri"] = code_uri
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = code_uri
    return transform(template, params, NoManagedPolicies())


def main():
    inputs = json.load(sys.stdin)
    json.dump([translate(i["template"], i["codeUri"], i["params"]) for i in inputs], sys.stdout, indent=1)


if __name__ == "__main__":
    main()
