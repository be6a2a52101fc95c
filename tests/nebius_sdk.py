"""The simulator driven by the official Nebius Python SDK (PyPI `nebius`, pinned by
scripts/fetch-nebius-sdk.sh): the SDK is Nebius's word on the wire, so where it and the
simulator disagree the simulator is wrong (docs/cloud.md lists the exceptions).

Run by tests/sdk_sim.rs against a simulator it starts, with SIM_ADDR, SIM_TOKEN, SIM_TENANT
and a service account (SA_ID, SA_KEY_ID, SA_KEY_FILE) in the environment. Prints one line per
check, `ok <name>` or `FAIL <name>: <why>`, and exits 1 if any failed.
"""

import asyncio
import os
import sys
import traceback
import uuid

import grpc
from nebius.aio.service_error import RequestError
from nebius.base.options import INSECURE
from nebius.base.resolver import Constant
from nebius.sdk import SDK

import nebius.api.nebius.applications.v1alpha1 as apps
import nebius.api.nebius.common.v1 as common
import nebius.api.nebius.compute.v1 as compute
import nebius.api.nebius.iam.v1 as iam1
import nebius.api.nebius.iam.v2 as iam2
import nebius.api.nebius.mk8s.v1 as mk8s
import nebius.api.nebius.storage.v1 as storage
import nebius.api.nebius.vpc.v1 as vpc

ADDR = os.environ["SIM_ADDR"]
TOKEN = os.environ["SIM_TOKEN"]
TENANT = os.environ["SIM_TENANT"]
REGION = "us-central1"
FAILED = []


def sdk(**credentials):
    if not credentials:
        credentials = {"credentials": TOKEN}
    return SDK(
        resolver=Constant(ADDR),
        address_options={ADDR: [(INSECURE, True)]},
        user_agent_prefix="fleetbot-sdk-conformance/1",
        **credentials,
    )


def check(name, condition, why=""):
    if condition:
        print(f"ok {name}", flush=True)
    else:
        FAILED.append(name)
        print(f"FAIL {name}: {why}", flush=True)


async def refused(coro):
    """The RequestError a call raises (None when it succeeds)."""
    try:
        result = await coro
        if hasattr(result, "wait"):
            await result.wait()
    except RequestError as e:
        return e
    return None


def violations(error):
    out = []
    for service_error in error.status.service_errors:
        if service_error.bad_request is not None:
            out += [v.field for v in service_error.bad_request.violations]
    return out


def meta(parent, name="", **kw):
    return common.ResourceMetadata(parent_id=parent, name=name, **kw)


async def done(op):
    await op.wait()
    return op.resource_id


async def iam_v2(c):
    tenants = await iam2.TenantServiceClient(c).list(iam2.ListTenantsRequest())
    check("iam v2 tenant list", [t.metadata.id for t in tenants.items] == [TENANT], tenants)
    tenant = await iam2.TenantServiceClient(c).get(iam2.GetTenantRequest(id=TENANT))
    check("iam v2 tenant get", tenant.metadata.id == TENANT, tenant)
    projects = iam2.ProjectServiceClient(c)
    ids = []
    for n in range(3):
        op = await projects.create(
            iam2.CreateProjectRequest(
                metadata=meta(TENANT, f"sdk-{n}"), spec=iam2.ProjectSpec(region=REGION)
            )
        )
        ids.append(await done(op))
    got = await projects.get(iam2.GetProjectRequest(id=ids[0]))
    check(
        "iam v2 project create and get",
        got.spec.region == REGION
        and got.status.project_state == iam2.ProjectStatus.ProjectState.ACTIVE,
        got,
    )
    by_name = await projects.get_by_name(
        iam2.GetProjectByNameRequest(parent_id=TENANT, name="sdk-1")
    )
    check("iam v2 project get by name", by_name.metadata.id == ids[1], by_name)
    # Pagination to the end, one item a page.
    seen, token, pages = [], "", 0
    while True:
        page = await projects.list(
            iam2.ListProjectsRequest(parent_id=TENANT, page_size=1, page_token=token)
        )
        seen += [p.metadata.id for p in page.items]
        pages += 1
        token = page.next_page_token
        if not token or pages > 100:
            break
    check("pagination to the end", set(ids) <= set(seen) and len(seen) == pages, (seen, pages))
    v1 = await iam1.ProjectServiceClient(c).get(iam1.GetProjectRequest(id=ids[2]))
    check("iam v1 serves the same projects", v1.metadata.id == ids[2], v1)
    return ids[0]


async def network_and_subnet(c, project):
    nets = vpc.NetworkServiceClient(c)
    network = await done(
        await nets.create(vpc.CreateNetworkRequest(metadata=meta(project, "sdk-net")))
    )
    got = await nets.get(vpc.GetNetworkRequest(id=network))
    check(
        "network lifecycle and its default pools",
        len(got.spec.ipv4_private_pools.pools) == 1 and len(got.spec.ipv4_public_pools.pools) == 1,
        got,
    )
    subnets = vpc.SubnetServiceClient(c)
    missing = await refused(
        subnets.create(vpc.CreateSubnetRequest(metadata=meta(project, "s"), spec=vpc.SubnetSpec()))
    )
    check(
        "required: a subnet without a network",
        missing is not None
        and missing.status.code == grpc.StatusCode.INVALID_ARGUMENT
        and violations(missing) == ["spec.network_id"],
        missing,
    )
    subnet = await done(
        await subnets.create(
            vpc.CreateSubnetRequest(
                metadata=meta(project, "sdk-subnet"), spec=vpc.SubnetSpec(network_id=network)
            )
        )
    )
    got = await subnets.get(vpc.GetSubnetRequest(id=subnet))
    check("subnet lifecycle", got.spec.network_id == network, got)
    return network, subnet


async def filesystem(c, project):
    fs = compute.FilesystemServiceClient(c)
    missing = await refused(
        fs.create(
            compute.CreateFilesystemRequest(
                metadata=meta(project, "no-type"), spec=compute.FilesystemSpec(size_gibibytes=64)
            )
        )
    )
    check(
        "required: a filesystem without a type",
        missing is not None and violations(missing) == ["spec.type"],
        missing,
    )
    spec = compute.FilesystemSpec(
        size_gibibytes=64, type=compute.FilesystemSpec.FilesystemType.NETWORK_SSD
    )
    fid = await done(
        await fs.create(compute.CreateFilesystemRequest(metadata=meta(project, "sdk-fs"), spec=spec))
    )
    got = await fs.get(compute.GetFilesystemRequest(id=fid))
    got.spec.size_gibibytes = 128
    await done(await fs.update(compute.UpdateFilesystemRequest(metadata=got.metadata, spec=got.spec)))
    got = await fs.get(compute.GetFilesystemRequest(id=fid))
    check(
        "filesystem lifecycle (update through the SDK's full mask)",
        got.spec.size_gibibytes == 128 and got.spec.block_size_bytes == 4096,
        got,
    )
    got.spec.type = compute.FilesystemSpec.FilesystemType.NETWORK_HDD
    changed = await refused(
        fs.update(compute.UpdateFilesystemRequest(metadata=got.metadata, spec=got.spec))
    )
    check(
        "immutable: a filesystem's type",
        changed is not None
        and changed.status.code == grpc.StatusCode.INVALID_ARGUMENT
        and violations(changed) == ["spec.type"],
        changed,
    )
    gpu = compute.GpuClusterServiceClient(c)
    gid = await done(
        await gpu.create(
            compute.CreateGpuClusterRequest(
                metadata=meta(project, "sdk-fabric"),
                spec=compute.GpuClusterSpec(infiniband_fabric="fabric-2"),
            )
        )
    )
    got = await gpu.get(compute.GetGpuClusterRequest(id=gid))
    check("gpu cluster lifecycle", got.spec.infiniband_fabric == "fabric-2", got)
    return fid


def template(subnet=None, labels=None):
    return mk8s.NodeTemplate(
        metadata=mk8s.NodeMetadataTemplate(labels=labels or {}),
        resources=mk8s.ResourcesSpec(platform="cpu-d3", preset="4vcpu-16gb"),
        boot_disk=mk8s.DiskSpec(size_gibibytes=128),
    )


async def cluster_and_node_group(c, project, subnet, fid):
    clusters = mk8s.ClusterServiceClient(c)
    missing = await refused(
        clusters.create(
            mk8s.CreateClusterRequest(
                metadata=meta(project, "no-subnet"),
                spec=mk8s.ClusterSpec(control_plane=mk8s.ControlPlaneSpec(version="1.31")),
            )
        )
    )
    check(
        "required: a cluster without a control-plane subnet",
        missing is not None and violations(missing) == ["spec.control_plane.subnet_id"],
        missing,
    )
    cid = await done(
        await clusters.create(
            mk8s.CreateClusterRequest(
                metadata=meta(project, "sdk-cluster"),
                spec=mk8s.ClusterSpec(
                    control_plane=mk8s.ControlPlaneSpec(
                        version="1.31",
                        subnet_id=subnet,
                        endpoints=mk8s.ControlPlaneEndpointsSpec(
                            public_endpoint=mk8s.PublicEndpointSpec()
                        ),
                    )
                ),
            )
        )
    )
    got = await clusters.get(mk8s.GetClusterRequest(id=cid))
    check(
        "cluster lifecycle",
        got.status.state == mk8s.ClusterStatus.State.RUNNING
        and got.spec.control_plane.subnet_id == subnet,
        got,
    )
    groups = mk8s.NodeGroupServiceClient(c)
    missing = await refused(
        groups.create(
            mk8s.CreateNodeGroupRequest(
                metadata=meta(cid, "no-template"), spec=mk8s.NodeGroupSpec(fixed_node_count=1)
            )
        )
    )
    check(
        "required: a node group without a template",
        missing is not None and violations(missing) == ["spec.template"],
        missing,
    )
    spec = mk8s.NodeGroupSpec(fixed_node_count=2, template=template(labels={"team": "ml"}))
    spec.template.filesystems = [
        mk8s.AttachedFilesystemSpec(
            attach_mode=mk8s.AttachedFilesystemSpec.AttachMode.READ_WRITE,
            mount_tag="data",
            existing_filesystem=mk8s.ExistingFilesystem(id=fid),
        )
    ]
    gid = await done(
        await groups.create(
            mk8s.CreateNodeGroupRequest(metadata=meta(cid, "sdk-group", labels={"a": "1"}), spec=spec)
        )
    )
    got = await groups.get(mk8s.GetNodeGroupRequest(id=gid))
    check(
        "node group lifecycle and its defaults",
        got.status.node_count == 2
        and got.spec.template.network_interfaces[0].subnet_id == subnet
        and got.spec.template.boot_disk.type == mk8s.DiskSpec.DiskType.NETWORK_SSD,
        got,
    )
    # Partial mask: only the count changes; the template stays.
    partial = mk8s.UpdateNodeGroupRequest(
        metadata=common.ResourceMetadata(id=gid), spec=mk8s.NodeGroupSpec(fixed_node_count=3)
    )
    await done(await groups.update(partial, metadata=[("X-ResetMask", "spec.fixed_node_count")]))
    got = await groups.get(mk8s.GetNodeGroupRequest(id=gid))
    check(
        "partial mask keeps what it does not name",
        got.spec.fixed_node_count == 3
        and got.spec.template.resources.platform == "cpu-d3"
        and dict(got.spec.template.metadata.labels) == {"team": "ml"}
        and dict(got.metadata.labels) == {"a": "1"},
        got,
    )
    # Full mask: a spec without labels and attachments, smaller, removes them.
    full = mk8s.UpdateNodeGroupRequest(
        metadata=common.ResourceMetadata(id=gid, parent_id=cid, name="sdk-group"),
        spec=mk8s.NodeGroupSpec(fixed_node_count=1, template=template()),
    )
    await done(await groups.update(full))
    got = await groups.get(mk8s.GetNodeGroupRequest(id=gid))
    check(
        "full mask removes what the request leaves empty",
        got.spec.fixed_node_count == 1
        and len(got.spec.template.metadata.labels) == 0
        and len(got.spec.template.filesystems) == 0
        and len(got.metadata.labels) == 0
        and got.spec.template.network_interfaces[0].subnet_id == subnet,
        got,
    )
    listed = await groups.list(mk8s.ListNodeGroupsRequest(parent_id=cid))
    check("node group list", [g.metadata.id for g in listed.items] == [gid], listed)
    return cid, gid


async def catalogue(c, project, cid):
    platforms = compute.PlatformServiceClient(c)
    listed = await platforms.list(compute.ListPlatformsRequest(parent_id=project))
    names = [p.metadata.name for p in listed.items]
    check(
        "platform catalogue: the region's platforms with their presets' resources",
        "cpu-d3" in names
        and all(p.spec.presets for p in listed.items)
        and all(s.resources.vcpu_count > 0 for p in listed.items for s in p.spec.presets)
        and all(
            p.spec.gpu_count_quota_type.startswith("compute.instance.gpu.")
            for p in listed.items
            if p.metadata.name.startswith("gpu-")
        ),
        listed,
    )
    got = await platforms.get_by_name(common.GetByNameRequest(parent_id=project, name="cpu-d3"))
    check("platform by name", got.metadata.name == "cpu-d3", got)
    groups = mk8s.NodeGroupServiceClient(c)
    for field, resources in [
        ("spec.template.resources.platform", mk8s.ResourcesSpec(platform="gpu-h900-sxm", preset="8gpu-128vcpu-1600gb")),
        ("spec.template.resources.preset", mk8s.ResourcesSpec(platform="cpu-d3", preset="4vcpu-17gb")),
    ]:
        spec = mk8s.NodeGroupSpec(fixed_node_count=1, template=template())
        spec.template.resources = resources
        error = await refused(
            groups.create(mk8s.CreateNodeGroupRequest(metadata=meta(cid, "off-catalogue"), spec=spec))
        )
        check(
            f"catalogue: an unknown {field.rsplit('.', 1)[1]} is refused naming the field",
            error is not None and violations(error) == [field],
            error,
        )


async def release(c, project, cid):
    releases = apps.K8sReleaseServiceClient(c)
    rid = await done(
        await releases.create(
            apps.CreateK8sReleaseRequest(
                metadata=meta(project),
                spec=apps.K8sReleaseSpec(
                    cluster_id=cid,
                    product_slug="nebius/nvidia-device-plugin",
                    namespace="nvidia",
                    application_name="device-plugin",
                ),
            )
        )
    )
    got = await releases.get(apps.GetK8sReleaseRequest(id=rid))
    check("marketplace release lifecycle", got.spec.cluster_id == cid, got)
    await done(await releases.delete(apps.DeleteK8sReleaseRequest(id=rid)))


async def buckets(c, project):
    b = storage.BucketServiceClient(c)
    bid = await done(
        await b.create(
            storage.CreateBucketRequest(
                metadata=meta(project, "sdk-bucket"), spec=storage.BucketSpec(max_size_bytes=1 << 30)
            )
        )
    )
    got = await b.get(storage.GetBucketRequest(id=bid))
    check(
        "bucket lifecycle and its default versioning",
        got.spec.versioning_policy == storage.VersioningPolicy.DISABLED
        and got.status.state == storage.BucketStatus.State.ACTIVE,
        got,
    )
    # Versioning on, through the SDK's full mask of what was read.
    got.spec.versioning_policy = storage.VersioningPolicy.ENABLED
    await done(await b.update(storage.UpdateBucketRequest(metadata=got.metadata, spec=got.spec)))
    # The SDK README's manual mask: no spec, `spec.max_size_bytes` — only the cap resets.
    await done(
        await b.update(
            storage.UpdateBucketRequest(metadata=common.ResourceMetadata(id=bid)),
            metadata=[("X-ResetMask", "spec.max_size_bytes")],
        )
    )
    got = await b.get(storage.GetBucketRequest(id=bid))
    check(
        "bucket cap back to unlimited by a partial mask, nothing else changed",
        got.spec.max_size_bytes == 0
        and got.spec.versioning_policy == storage.VersioningPolicy.ENABLED
        and got.metadata.name == "sdk-bucket",
        got,
    )
    renamed = await refused(
        b.update(
            storage.UpdateBucketRequest(
                metadata=common.ResourceMetadata(id=bid, name="other"), spec=storage.BucketSpec()
            )
        )
    )
    check(
        "immutable: a bucket's name",
        renamed is not None and violations(renamed) == ["metadata.name"],
        renamed,
    )
    purge = await refused(b.purge(storage.PurgeBucketRequest(id=bid)))
    check(
        "purge refuses an active bucket",
        purge is not None and purge.status.code == grpc.StatusCode.FAILED_PRECONDITION,
        purge,
    )
    await done(await b.delete(storage.DeleteBucketRequest(id=bid)))
    got = await b.get(storage.GetBucketRequest(id=bid))
    s = got.status
    check(
        "soft delete: scheduled, purge in 7 days",
        s.state == storage.BucketStatus.State.SCHEDULED_FOR_DELETION
        and s.purge_at is not None
        and round((s.purge_at - s.deleted_at).total_seconds()) == 7 * 24 * 3600,
        got,
    )
    listed = await b.list(storage.ListBucketsRequest(parent_id=project))
    check("soft delete: still listed", [x.metadata.id for x in listed.items] == [bid], listed)
    await done(await b.undelete(storage.UndeleteBucketRequest(id=bid)))
    got = await b.get(storage.GetBucketRequest(id=bid))
    check(
        "undelete",
        got.status.state == storage.BucketStatus.State.ACTIVE and got.status.purge_at is None,
        got,
    )
    await done(await b.delete(storage.DeleteBucketRequest(id=bid)))
    await done(await b.purge(storage.PurgeBucketRequest(id=bid)))
    gone = await refused(b.get(storage.GetBucketRequest(id=bid)))
    check(
        "purge of a scheduled bucket",
        gone is not None and gone.status.code == grpc.StatusCode.NOT_FOUND,
        gone,
    )


async def access(c, project):
    accounts = iam1.ServiceAccountServiceClient(c)
    sa = await done(
        await accounts.create(
            iam1.CreateServiceAccountRequest(
                metadata=meta(project, "sdk-sa"), spec=iam1.ServiceAccountSpec()
            )
        )
    )
    keys = iam2.AccessKeyServiceClient(c)
    kid = await done(
        await keys.create(
            iam2.CreateAccessKeyRequest(
                metadata=meta(project),
                spec=iam2.AccessKeySpec(account=iam1.Account(service_account=iam1.Account.ServiceAccount(id=sa))),
            )
        )
    )
    secret = await keys.get_secret(iam2.GetAccessKeySecretRequest(id=kid))
    check("service account and access key lifecycle", len(secret.secret) == 40, secret)


async def idempotency(c, project):
    nets = vpc.NetworkServiceClient(c)
    key = [("x-idempotency-key", str(uuid.uuid4()))]
    req = vpc.CreateNetworkRequest(metadata=meta(project, "idem-net"))
    first = await nets.create(req, metadata=key)
    await first.wait()
    again = await nets.create(req, metadata=key)
    check("idempotency key replays the first operation", first.id == again.id, (first, again))
    other = await refused(nets.create(vpc.CreateNetworkRequest(metadata=meta(project, "x")), metadata=key))
    check("idempotency key refuses another request", other is not None, other)


async def errors(c):
    b = storage.BucketServiceClient(c)
    e = await refused(b.get(storage.GetBucketRequest(id="storagebucket-u00nothere")))
    found = [se.resource_not_found for se in e.status.service_errors] if e else []
    check(
        "errors: code, details and request IDs",
        e is not None
        and e.status.code == grpc.StatusCode.NOT_FOUND
        and found
        and found[0].resource_id == "storagebucket-u00nothere"
        and e.status.request_id
        and e.status.trace_id
        and "request_id: " in str(e),
        e,
    )


async def token_exchange():
    c = sdk(
        service_account_id=os.environ["SA_ID"],
        service_account_public_key_id=os.environ["SA_KEY_ID"],
        service_account_private_key_file_name=os.environ["SA_KEY_FILE"],
    )
    try:
        tenant = await iam2.TenantServiceClient(c).get(iam2.GetTenantRequest(id=TENANT))
        check("service-account token exchange", tenant.metadata.id == TENANT, tenant)
    finally:
        await c.close()


async def main():
    c = sdk()
    try:
        for step in [iam_v2]:
            project = await step(c)
        _, subnet = await network_and_subnet(c, project)
        fid = await filesystem(c, project)
        cid, _ = await cluster_and_node_group(c, project, subnet, fid)
        await catalogue(c, project, cid)
        await release(c, project, cid)
        await buckets(c, project)
        await access(c, project)
        await idempotency(c, project)
        await errors(c)
    except Exception:
        FAILED.append("unexpected error")
        traceback.print_exc()
    finally:
        await c.close()
    try:
        await token_exchange()
    except Exception:
        FAILED.append("token exchange")
        traceback.print_exc()
    print(f"{len(FAILED)} failed", flush=True)
    sys.exit(1 if FAILED else 0)


asyncio.run(main())
