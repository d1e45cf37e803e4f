"""Transforms a SAM template into CloudFormation JSON on standard output.

Usage: transform.py TEMPLATE CODE_URI [Name=Value ...]

Every function's CodeUri becomes CODE_URI (s3://bucket/key), as
`sam package` would make it after uploading the code.

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


def main():
    with open(sys.argv[1]) as f:
        template = yaml_parse(f.read())
    code_uri = sys.argv[2]
    template.setdefault("Globals", {}).setdefault("Function", {})["CodeUri"] = code_uri
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = code_uri
    params = dict(arg.split("=", 1) for arg in sys.argv[3:])
    json.dump(transform(template, params, NoManagedPolicies()), sys.stdout, indent=1)


if __name__ == "__main__":
    main()
