#!/bin/sh
# synthetic locations for scanner tests
docker pull cr.eu-north1.nebius.cloud/e00nvc6jq2r6vy6bye/trainer:1.4
docker push "cr.us-central1.nebius.cloud/team-images-293bcfd507/infer:latest"
IMAGE=cr.eu-west1.nebius.cloud/nightly-20260114/base
aws s3 cp ./ckpt s3://training-artifacts-a8eb8aa44cb3/run-7/ --recursive
aws s3 sync s3://eval-runs-20251231 ./eval
export DATA=s3://lerobot-5dc52334/datasets
