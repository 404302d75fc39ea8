#!/usr/bin/env bash
# The local Kubernetes cluster tug's end-to-end tests and demo run against:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, one kube-proxy
# and one or two real nodes (each a kubelet with its own containerd), all on
# this machine, with no internet, an image registry and a router (Traefik)
# on host-only addresses. See README.md, "Local cluster".
#
#   cluster.sh up [NODES]   start (NODES=1 or 2); says so when already up
#                           (restarts one with fewer nodes or another Kubernetes version)
#   cluster.sh down         stop what up started and remove what it created
#   cluster.sh status       exit 0 when the cluster answers and nodes are Ready
#   cluster.sh kubeconfig   print the admin kubeconfig's path
#   cluster.sh registry     print the local registry's HOST:PORT
#   cluster.sh service-images  print "NAME REF@DIGEST" of the backing-service
#                           images (postgres, redis) and their sample app (dbapp)
#                           in the local registry
#   cluster.sh router       print the router's address (HTTP :80, HTTPS :443)
#   cluster.sh ensure-registry  on a running cluster: start the registry,
#                           push and import test images it lacks, start the
#                           volume provisioner (no restart)
#   cluster.sh ensure-router    the same (one step adds both): also start the
#                           router, write the cluster settings and apply
#                           cert-manager's CRDs (no cert-manager controller)
#   cluster.sh ensure-cnb-builder  on a running cluster: push the CNB test
#                           builder (tug/cnb-builder:v1; part of ensure-registry too)
#   cluster.sh ensure-cert-manager-crds  on a running cluster: only apply
#                           cert-manager's CRDs (part of ensure-router too)
#   cluster.sh ensure-metrics [--register]  on a running cluster: start
#                           metrics-server and register the metrics API (see
#                           cluster-metrics.sh; part of ensure-router too)
#   cluster.sh check-clean  exit 1 listing anything a cluster left behind
#   cluster.sh apiserver start|stop|kill PORT  on a running cluster: a second
#                           kube-apiserver on 127.0.0.1:PORT (same etcd, certificates
#                           and flags), for tests that restart an API server
#
# K8S_VERSION picks the Kubernetes release (default: build-localk8s.sh's, the
# newest tug is tested against; docs/compatibility.md lists the others).
#
# State is per machine, not per clone (ports are per machine): a second clone
# finds the cluster the first one started.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=${TUG_CLUSTER_DIR:-/var/lib/tug-cluster}
logs=$dir/logs
pki=$dir/pki
pids=$dir/pids
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tug
# The Kubernetes version this run wants (validated by the build script).
k8s_version=$("$here/build-localk8s.sh" --version) || exit 2

# Addresses. Everything listens on 127.0.0.1 except the kubelets, which refuse
# loopback: each gets a host-only /32 on a bridge that has no ports.
host_bridge=tughost0
node_ip() { echo "10.200.0.$1"; }
pod_range=10.201.0.0/16
node_pods() { echo "10.201.$1.0/24"; }
node_bridge() { echo "tugcni$1"; }
service_range=10.202.0.0/16
local_ranges=10.200.0.0/14 # node, pod and service ranges together
etcd_port=12379
etcd_peer_port=12380
api_port=16443
apiserver=https://127.0.0.1:$api_port
kubeconfig=$dir/admin.kubeconfig
# The image registry (test/cluster/registry): plain HTTP on the host-only
# address only, which the nodes' containerd and the pods both reach.
registry_port=15000
registry_addr=$(node_ip 1):$registry_port
fw_chain=TUG-LOCAL-ONLY
# The router (Traefik, built by build-router.sh): a host process on a host-only
# address of its own, HTTP on :80 and HTTPS on :443, serving the Gateway API
# (GatewayClass traefik, Gateway tug-system/router) and Ingress (IngressClass
# traefik). App URLs are names under the apps domain; nothing resolves them
# (.test is reserved for testing, RFC 6761, and no resolver asks the network
# for it by multicast as for .local): clients dial the router's address with
# the name as Host and SNI (curl --resolve).
router_ip=$(node_ip 100)
apps_domain=apps.tug.test
router_ns=tug-system
gateway_name=router
gateway_class=traefik
ingress_class=traefik
# The router's process runs in this cgroup (v2 hierarchy); an OUTPUT rule for
# it lets it open connections only to loopback (the apiserver) and the pod
# and service ranges, so no Service or EndpointSlice can make it send a
# packet off the machine.
router_cgroup=tug-router
router_chain=TUG-ROUTER-OUT
# and only this machine (loopback) and its pods reach the router's address
router_in_chain=TUG-ROUTER-IN

say() { printf 'cluster: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=cluster-metrics.sh
. "$here/cluster-metrics.sh"

# ---------------------------------------------------------------- processes

# start NAME CMD...: run CMD in its own session, log to logs/NAME.log, record its PID.
start() {
  local name=$1; shift
  mkdir -p "$logs" "$pids"
  setsid "$@" >"$logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$pids/$name.pid"
}

alive() { # alive NAME: its recorded process is running
  local pid
  pid=$(cat "$pids/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# fail NAME MESSAGE: say which component failed and show the tail of its log.
fail() {
  say "$2"
  if [ -f "$logs/$1.log" ]; then
    say "last lines of $logs/$1.log:"
    tail -n 25 "$logs/$1.log" | sed 's/^/  | /' >&2
  fi
  exit 1
}

# wait_for NAME SECONDS CHECK...: poll CHECK until it passes; fail naming NAME
# (and showing its log) when NAME dies or the deadline passes. Components
# have no event to watch before their API is up, so this polls at 0.2 s.
wait_for() {
  local name=$1 secs=$2; shift 2
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    alive "$name" || fail "$name" "$name exited during start-up"
    [ "$(date +%s)" -lt "$deadline" ] || fail "$name" "$name not ready after ${secs}s"
    sleep 0.2
  done
}

kctl() { "$k8s" kubectl --kubeconfig "$kubeconfig" "$@"; }

# ---------------------------------------------------------------- install

need_packages() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  [ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx nc || missing+=(busybox-static)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v ip >/dev/null || missing+=(iproute2)
  command -v nsenter >/dev/null || missing+=(util-linux)
  # the backing-service images are made from Debian packages (test/images/services)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}); run as root so they can be installed"
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ---------------------------------------------------------------- PKI

# cert NAME CN [O] [SANS]: an ECDSA key and a certificate signed by the cluster CA.
cert() {
  local name=$1 cn=$2 org=${3:-} sans=${4:-}
  local subj="/CN=$cn"
  [ -n "$org" ] && subj="/O=$org$subj"
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
  local ext="$pki/$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$sans" ]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$sans"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } > "$ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 365 -sha256 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$ext"
}

# kubeconfig FILE CERTNAME: a kubeconfig for the apiserver with a client certificate.
write_kubeconfig() {
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tug-local
  cluster:
    server: $apiserver
    certificate-authority: $pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: tug-local
  context: {cluster: tug-local, user: $2, namespace: default}
current-context: tug-local
EOF
}

make_pki() {
  local nodes=$1
  mkdir -p "$pki"
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=tug-local-ca" -days 365 -sha256 -out "$pki/ca.crt" 2>/dev/null
  cert apiserver kube-apiserver "" \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.202.0.1"
  cert admin kubernetes-admin system:masters
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  cert controller-manager system:kube-controller-manager
  cert scheduler system:kube-scheduler
  cert kube-proxy system:kube-proxy
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key" 2>/dev/null
  openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  write_kubeconfig "$kubeconfig" admin
  write_kubeconfig "$dir/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$dir/scheduler.kubeconfig" scheduler
  write_kubeconfig "$dir/kube-proxy.kubeconfig" kube-proxy
  local n
  for n in $(seq 1 "$nodes"); do
    cert "node$n" "system:node:node$n" system:nodes
    cert "node$n-serving" "node$n" "" "DNS:node$n,IP:$(node_ip "$n")"
    write_kubeconfig "$dir/node$n.kubeconfig" "node$n"
  done
  metrics_pki
}

# ---------------------------------------------------------------- network

sysctl_set() { # remember the machine's value once, so down can put it back
  local key=$1 value=$2 file=/proc/sys/${1//.//}
  [ -f "$file" ] || return 0
  grep -q "^$key=" "$dir/sysctl.orig" 2>/dev/null || echo "$key=$(cat "$file")" >> "$dir/sysctl.orig"
  echo "$value" > "$file"
}

setup_network() {
  local nodes=$1 n
  ip link add "$host_bridge" type bridge 2>/dev/null || true
  ip link set "$host_bridge" up
  for n in $(seq 1 "$nodes"); do
    ip addr replace "$(node_ip "$n")/32" dev "$host_bridge"
  done
  # Whole ranges go to the port-less bridge, so an address with no endpoint
  # dies here instead of following the default route off the machine. The
  # CNI bridges' own /24s are more specific and win for live pods; kube-proxy
  # DNATs service addresses before routing.
  ip route replace "$pod_range" dev "$host_bridge"
  ip route replace "$service_range" dev "$host_bridge"
  ip route replace 10.200.0.0/24 dev "$host_bridge"
  sysctl_set net.ipv4.ip_forward 1
  sysctl_set net.bridge.bridge-nf-call-iptables 1
  sysctl_set net.ipv4.conf.all.route_localnet 1
  # Forwarded traffic from pods may only go to the local ranges: no pod packet
  # leaves the machine even though ip_forward is on.
  iptables -N "$fw_chain" 2>/dev/null || iptables -F "$fw_chain"
  iptables -A "$fw_chain" -d "$local_ranges" -j RETURN
  iptables -A "$fw_chain" -s "$pod_range" -j DROP
  iptables -C FORWARD -j "$fw_chain" 2>/dev/null || iptables -I FORWARD 1 -j "$fw_chain"
}

# ---------------------------------------------------------------- components

start_etcd() {
  start etcd etcd --name tug-local --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "tug-local=http://127.0.0.1:$etcd_peer_port" --listen-metrics-urls "" \
    --quota-backend-bytes 2147483648 --unsafe-no-fsync
}

start_control_plane() {
  # shellcheck disable=SC2046 # the aggregation flags are words to pass on
  start kube-apiserver "$k8s" kube-apiserver \
    --etcd-servers "http://127.0.0.1:$etcd_port" --bind-address 127.0.0.1 --secure-port "$api_port" \
    --advertise-address "$(node_ip 1)" --endpoint-reconciler-type none \
    --service-cluster-ip-range "$service_range" --service-node-port-range 30000-32767 \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --authorization-mode Node,RBAC --allow-privileged \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
    --profiling=false --v 1 $(aggregation_flags)
  wait_for kube-apiserver 60 curl -sfk --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$apiserver/readyz"

  start kube-controller-manager "$k8s" kube-controller-manager \
    --kubeconfig "$dir/controller-manager.kubeconfig" --bind-address 127.0.0.1 --leader-elect=false \
    --authentication-kubeconfig "$dir/controller-manager.kubeconfig" --authorization-kubeconfig "$dir/controller-manager.kubeconfig" \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --use-service-account-credentials \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --service-cluster-ip-range "$service_range" --profiling=false --v 1
  start kube-scheduler "$k8s" kube-scheduler \
    --kubeconfig "$dir/scheduler.kubeconfig" --bind-address 127.0.0.1 --leader-elect=false \
    --authentication-kubeconfig "$dir/scheduler.kubeconfig" --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
    --profiling=false --v 1
}

# Each node gets its own cgroup root in every v1 hierarchy; kubelets sharing
# one fight over the kubepods cgroups. A new cpuset cgroup starts empty, and
# the kubelet refuses it, so copy the parent's CPUs and memory nodes.
make_node_cgroups() {
  local n=$1 h
  for h in /sys/fs/cgroup/*/; do
    [ -f "$h/cgroup.procs" ] || continue
    case "$h" in */unified/) continue ;; esac
    mkdir -p "$h/node$n"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" > "$h/node$n/cpuset.cpus"
      cat "$h/cpuset.mems" > "$h/node$n/cpuset.mems"
    fi
  done
}

start_node() {
  local n=$1 nd=$dir/node$n
  local ip sock
  ip=$(node_ip "$n")
  sock=$nd/containerd.sock
  mkdir -p "$nd/cni" "$nd/kubelet" "$nd/pod-logs"
  cat > "$nd/containerd.toml" <<EOF
version = 2
root = "$nd/containerd/root"
state = "$nd/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/tug/pause:v1"
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails with
  # "can't get final child's PID from pipe"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".registry]
    # hosts.toml per registry: the local registry speaks plain HTTP
    config_path = "$nd/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$nd/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$nd/runc"
EOF
  cat > "$nd/cni/10-tug.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "tug-node$n",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$(node_bridge "$n")",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$nd/ipam",
        "ranges": [[{"subnet": "$(node_pods "$n")"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "loopback"}
  ]
}
EOF
  write_registry_hosts "$n"
  start "containerd-node$n" containerd --config "$nd/containerd.toml"
  wait_for "containerd-node$n" 30 ctr --address "$sock" version

  # One configuration for every supported version (docs/compatibility.md).
  # containerd 1.6 lacks the CRI RuntimeConfig call: the kubelet (up to 1.37)
  # falls back to cgroupDriver below and logs so once.
  cat > "$nd/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: $((10247 + n * 100))
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $pki/node$n-serving.crt
tlsPrivateKeyFile: $pki/node$n-serving.key
containerRuntimeEndpoint: unix://$sock
cgroupDriver: cgroupfs
cgroupRoot: /node$n
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
# cgroup v1 machines: the default turned true in 1.35 (false up to 1.34)
failCgroupV1: false
failSwapOn: false
podLogsDir: $nd/pod-logs
# Test images are imported, not pulled: a node must use what it has. Since
# 1.35 the kubelet re-checks credentials for an image it once pulled under
# another name (the same bytes from the local registry), which would make it
# pull localhost/... and fail.
imagePullCredentialsVerificationPolicy: NeverVerify
# Nothing can be pulled again here: never collect images.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}
serializeImagePulls: false
maxPods: 110
EOF
  start "kubelet-node$n" "$k8s" kubelet --config "$nd/kubelet.yaml" --kubeconfig "$dir/node$n.kubeconfig" \
    --hostname-override "node$n" --node-ip "$ip" --root-dir "$nd/kubelet" --cert-dir "$nd/kubelet/pki" --v 1
}

# write_registry_hosts N: node N's containerd pulls from the local registry
# over plain HTTP (read per pull, so no restart is needed to change it).
# Every other registry name (docker.io, ghcr.io, ...) is answered by the
# local registry too (containerd's _default host, 1.6.12+), so a pull of a
# public image never asks DNS or leaves the machine: it is served when the
# local registry holds that path, and fails at once with "not found" else.
write_registry_hosts() {
  local d
  for d in "$dir/node$1/certs.d/$registry_addr" "$dir/node$1/certs.d/_default"; do
    mkdir -p "$d"
    cat > "$d/hosts.toml" <<EOF
server = "http://$registry_addr"

[host."http://$registry_addr"]
  capabilities = ["pull", "resolve"]
EOF
  done
}

start_proxy() {
  cat > "$dir/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clusterCIDR: $pod_range
hostnameOverride: node1
nodePortAddresses: [10.200.0.0/24]
clientConnection: {kubeconfig: $dir/kube-proxy.kubeconfig}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  start kube-proxy "$k8s" kube-proxy --config "$dir/kube-proxy.yaml" --v 1
}

# ---------------------------------------------------------------- images

build_images() {
  local key out bk t missing=""
  # BuildKit (Dockerfile builds) from Go modules, cached like Kubernetes
  bk=$("$repo/test/images/buildkit/build.sh") || die "building BuildKit failed"
  key=$(images_key "$bk")
  out=$cache/images/$key
  for t in $built_tars; do [ -f "$out/$t.tar" ] || missing=1; done
  if [ -n "$missing" ]; then
    say "building images"
    (cd "$repo" && GOTOOLCHAIN=local go run ./test/images/build -out "$out" -buildkit "$bk") || die "image build failed"
  fi
  service_images_wait
  [ -z "${dbapp_warm_pid:-}" ] || wait "$dbapp_warm_pid" || true
  # beside the others, so every step below finds each image as $images/NAME.tar
  for t in $service_tars; do
    ln -f "$service_images/$t.tar" "$out/$t.tar" 2>/dev/null || cp "$service_images/$t.tar" "$out/$t.tar"
  done
  images=$out
}

# images_key BUILDKIT_DIR: the cache key of test/images/build's output.
images_key() {
  { cat "$repo"/test/images/*/*.go "$repo"/test/images/dbapp/go.mod "$repo"/test/images/dbapp/go.sum \
    "$repo"/cmd/tug-maintenance/*.go "$repo"/cmd/tug-build/*.go \
    "$repo"/pkg/imagebuild/protocol/*.go "$repo"/pkg/text/*.go; sha256sum /bin/busybox /usr/sbin/runc "$1"/*; go version; } |
    sha256sum | cut -c1-16
}

# the images test/images/build writes (dbapp: the backing-services sample app)
built_tars="pause sample maintenance builder tug-build busybox buildkit dbapp"
# the backing-service images test/images/services/build.sh makes from
# Debian's packages (debootstrap: ~2 min cold, so started early, beside the
# other builds of up, by service_images_start)
service_tars="postgres redis"
image_tars="$built_tars $service_tars"

# service_images_start: build the service images in the background.
service_images_start() {
  service_build_out=$(mktemp)
  "$repo/test/images/services/build.sh" >"$service_build_out" 2>"$service_build_out.log" &
  service_build_pid=$!
}

# service_images_wait: service_images is their folder (built now when
# service_images_start did not run).
service_images_wait() {
  [ -z "${service_images:-}" ] || return 0
  if [ -n "${service_build_pid:-}" ]; then
    wait "$service_build_pid" || { cat "$service_build_out.log" >&2; die "building the service images (postgres, redis) failed"; }
    service_images=$(cat "$service_build_out")
    rm -f "$service_build_out" "$service_build_out.log"
  else
    service_images=$("$repo/test/images/services/build.sh") || die "building the service images (postgres, redis) failed"
  fi
}

import_images() {
  local n=$1 t
  for t in $image_tars; do
    ctr --address "$dir/node$n/containerd.sock" -n k8s.io images import --no-unpack=false "$images/$t.tar" >/dev/null \
      || die "importing $t.tar into node$n's containerd failed"
  done
}

# ensure_images N: import what node N's containerd lacks (a cluster started
# before an image was added to test/images gets it without a restart).
ensure_images() {
  local n=$1 t ref digest have
  have=$(ctr --address "$dir/node$n/containerd.sock" -n k8s.io images ls 2>/dev/null | awk '{print $1, $3}') || return 0
  for t in $image_tars; do
    ref=$(tar -xOf "$images/$t.tar" index.json | grep -o '"io.containerd.image.name":"[^"]*"' | head -1 | cut -d'"' -f4)
    digest=$(tar -xOf "$images/$t.tar" index.json | grep -o '"digest":"[^"]*"' | head -1 | cut -d'"' -f4)
    if ! grep -qxF "$ref $digest" <<<"$have"; then
      ctr --address "$dir/node$n/containerd.sock" -n k8s.io images import --no-unpack=false "$images/$t.tar" >/dev/null \
        || die "importing $t.tar into node$n's containerd failed"
      say "imported $t.tar into node$n"
    fi
  done
}

# ---------------------------------------------------------------- registry

registry_up() { curl -sf --max-time 2 "http://$registry_addr/v2/" >/dev/null; }

# ensure_registry: the registry runs (started when it does not) and holds
# the test images under HOST:PORT/tug/..., with their digests. Idempotent:
# `up` on a running cluster calls it too.
ensure_registry() {
  local key bin
  key=$( { cat "$repo"/test/cluster/registry/*.go "$repo"/go.sum; go version; } | sha256sum | cut -c1-16)
  bin=$cache/registry/$key/registry
  if [ ! -x "$bin" ]; then
    say "building the registry"
    mkdir -p "$(dirname "$bin")"
    (cd "$repo" && GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$bin" ./test/cluster/registry) || die "building the registry failed"
  fi
  if ! alive registry; then
    mkdir -p "$dir/registry"
    start registry "$bin" serve -addr "$registry_addr" -dir "$dir/registry"
  fi
  wait_for registry 30 registry_up
  local t tars=()
  for t in $image_tars; do tars+=("$images/$t.tar"); done
  "$bin" push -registry "$registry_addr" "${tars[@]}" >>"$logs/registry-push.log" 2>&1 \
    || fail registry-push "pushing the test images into the registry failed"
  local n
  for n in $(seq 1 "$(cat "$dir/nodes" 2>/dev/null || echo 1)"); do write_registry_hosts "$n"; done
}

# ---------------------------------------------------------------- volumes

# The provisioner (test/cluster/provisioner): a host process that gives each
# PersistentVolumeClaim of StorageClass tug-local, the default class, a
# hostPath volume on a new directory under $dir/volumes (both nodes run on
# this machine), removed with its claim. It talks to the apiserver on
# 127.0.0.1 only and keeps no state: restarting it is harmless.
storage_class=tug-local
volumes_dir=$dir/volumes

storage_yaml() {
  cat <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $storage_class
  labels: {tug.dev/local-cluster: "true"}
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: tug.dev/local-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
}

provisioner_bin() {
  local key
  key=$( { cat "$repo"/test/cluster/provisioner/*.go "$repo"/go.sum; go version; } | sha256sum | cut -c1-16)
  echo "$cache/provisioner/$key/provisioner"
}

# provisioner_build_start: build the provisioner (client-go's informers:
# a minute of compiling cold) in the background, beside the other builds
# of up; ensure_provisioner waits for it.
provisioner_build_start() {
  local bin
  bin=$(provisioner_bin)
  [ -x "$bin" ] && return 0
  provisioner_build_log=$(mktemp)
  mkdir -p "$(dirname "$bin")"
  (cd "$repo" && GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$bin.tmp" ./test/cluster/provisioner && mv "$bin.tmp" "$bin") \
    >"$provisioner_build_log" 2>&1 &
  provisioner_build_pid=$!
}

# dbapp_warm_start: compile dbapp (pgx: its own module, tens of seconds
# cold) into Go's build cache in the background, with test/images/build's
# flags, so build_images, after Kubernetes, links it at once. Its result
# does not matter: test/images/build's own build reports errors.
dbapp_warm_start() {
  (cd "$repo/test/images/dbapp" && GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags '-s -w' -o /dev/null .) \
    >/dev/null 2>&1 &
  dbapp_warm_pid=$!
}

# ensure_provisioner: the provisioner runs (this build of it) and the
# StorageClass exists. Idempotent: up on a running cluster calls it.
ensure_provisioner() {
  local bin
  bin=$(provisioner_bin)
  if [ -n "${provisioner_build_pid:-}" ]; then
    wait "$provisioner_build_pid" || { cat "$provisioner_build_log" >&2; die "building the provisioner failed"; }
    rm -f "$provisioner_build_log"
    provisioner_build_pid=
  fi
  if [ ! -x "$bin" ]; then
    say "building the volume provisioner"
    mkdir -p "$(dirname "$bin")"
    (cd "$repo" && GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$bin" ./test/cluster/provisioner) || die "building the provisioner failed"
  fi
  if alive provisioner && [ "$(cat "$dir/provisioner.bin" 2>/dev/null)" != "$bin" ]; then
    kill -TERM "$(cat "$pids/provisioner.pid")" 2>/dev/null || true
    rm -f "$pids/provisioner.pid"
  fi
  if ! alive provisioner; then
    echo "$bin" > "$dir/provisioner.bin"
    start provisioner "$bin" -kubeconfig "$kubeconfig" -dir "$volumes_dir"
  fi
  storage_yaml | kapply -f - || die "applying the StorageClass $storage_class failed"
  wait_for provisioner 30 grep -q "serving" "$logs/provisioner.log"
}

# ---------------------------------------------------------------- CNB builder

# cnb_prebuild: start building the CNB lifecycle (test/images/lifecycle, a
# Go module of its own: ~3 min cold) in the background, beside the other
# builds of up; ensure_cnb_builder waits for it.
cnb_prebuild() {
  cnb_build_out=$(mktemp)
  "$repo/test/images/lifecycle/build.sh" >"$cnb_build_out" 2>"$cnb_build_out.log" &
  cnb_build_pid=$!
}

# ensure_cnb_builder: the registry holds tug/cnb-builder:v1, the CNB test
# builder (test/images/cnb: the real lifecycle, shell buildpacks, on
# tug/busybox:v1). Idempotent: the same inputs push the same digest, and
# the registry skips the blobs it has.
ensure_cnb_builder() {
  local lc ref
  if [ -n "${cnb_build_pid:-}" ]; then
    wait "$cnb_build_pid" || { cat "$cnb_build_out.log" >&2; die "building the CNB lifecycle failed"; }
    lc=$(cat "$cnb_build_out")
    rm -f "$cnb_build_out" "$cnb_build_out.log"
  else
    lc=$("$repo/test/images/lifecycle/build.sh") || die "building the CNB lifecycle failed"
  fi
  ref=$(cd "$repo" && GOTOOLCHAIN=local go run ./test/images/cnb -registry "$registry_addr" -lifecycle "$lc" \
    -lifecycle-version "$("$repo/test/images/lifecycle/build.sh" --version | sed 's/^v//')") ||
    die "making the CNB test builder failed"
  say "CNB builder: $ref"
}

# ---------------------------------------------------------------- router

# cgroup2_root: where the cgroup v2 hierarchy is mounted (the whole tree on
# a v2 machine, /sys/fs/cgroup/unified on a hybrid v1 one).
cgroup2_root() { awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts; }

router_up() { curl -s -o /dev/null --max-time 2 --noproxy '*' "http://$router_ip/"; }

# gateway_programmed: the router says the Gateway's current spec is served.
gateway_programmed() {
  local gen seen status
  read -r gen seen status < <(kctl -n "$router_ns" get gateway "$gateway_name" \
    -o jsonpath='{.metadata.generation} {.status.conditions[?(@.type=="Programmed")].observedGeneration} {.status.conditions[?(@.type=="Programmed")].status}{"\n"}' 2>/dev/null) || return 1
  [ -n "$gen" ] && [ "$gen" = "$seen" ] && [ "$status" = True ]
}

# router_firewall: the router's cgroup exists, and its packets may only go
# to loopback and the pod and service ranges (kube-proxy's DNAT of a service
# address comes before this filter), apart from replies to its clients; its
# address takes packets only from loopback and the pods' bridges, never from
# a packet that came in from the network.
router_firewall() {
  local root
  root=$(cgroup2_root)
  [ -n "$root" ] || die "no cgroup v2 hierarchy is mounted: the router's egress rule needs one"
  mkdir -p "$root/$router_cgroup"
  iptables -N "$router_chain" 2>/dev/null || iptables -F "$router_chain"
  iptables -A "$router_chain" -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
  iptables -A "$router_chain" -d 127.0.0.0/8 -j RETURN
  iptables -A "$router_chain" -d "$pod_range" -j RETURN
  iptables -A "$router_chain" -d "$service_range" -j RETURN
  iptables -A "$router_chain" -p tcp -j REJECT --reject-with tcp-reset
  iptables -A "$router_chain" -j REJECT
  iptables -N "$router_in_chain" 2>/dev/null || iptables -F "$router_in_chain"
  iptables -A "$router_in_chain" -i lo -j RETURN
  iptables -A "$router_in_chain" -i "tugcni+" -j RETURN
  iptables -A "$router_in_chain" -j DROP
  remove_router_jumps
  iptables -I OUTPUT 1 -m cgroup --path "$router_cgroup" -j "$router_chain"
  iptables -I INPUT 1 -d "$router_ip" -j "$router_in_chain"
}

# remove_router_jumps: delete the jumps to the router's chains by number:
# one left by an earlier cluster may name a cgroup since removed, which a
# delete by match could not name.
remove_router_jumps() {
  local n builtin target
  for builtin in OUTPUT:$router_chain INPUT:$router_in_chain; do
    target=${builtin#*:} builtin=${builtin%%:*}
    while n=$(iptables -S "$builtin" 2>/dev/null | grep -n -- "-j $target\$" | head -1 | cut -d: -f1) && [ -n "$n" ]; do
      iptables -D "$builtin" $((n - 1)) || break # line 1 of -S is the policy
    done
  done
}

# remove_router_firewall: the rule goes, then its chain and cgroup.
remove_router_firewall() {
  local root
  root=$(cgroup2_root)
  remove_router_jumps
  iptables -F "$router_chain" 2>/dev/null || true
  iptables -X "$router_chain" 2>/dev/null || true
  iptables -F "$router_in_chain" 2>/dev/null || true
  iptables -X "$router_in_chain" 2>/dev/null || true
  [ -n "$root" ] && [ -d "$root/$router_cgroup" ] && { rmdir "$root/$router_cgroup" 2>/dev/null || true; }
}

kapply() { kctl apply --server-side --force-conflicts --field-manager tug-cluster "$@" >/dev/null; }

# traefik_crds: the file of Traefik's own CRDs (traefik.io: Middleware,
# IngressRoute, ...) in the module of the Traefik that build-router.sh
# builds (already in the module cache). tug makes Middlewares (an app's
# allow list); Traefik's kubernetescrd provider waits until it can list
# every one of these kinds, so all of them are installed.
traefik_crds() {
  local v d f
  v=$("$here/build-router.sh" --version) || return 1
  d=$(cd "$here/router" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go mod download -json "github.com/traefik/traefik/v3@$v" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  f=$d/docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml
  [ -f "$f" ] || { say "github.com/traefik/traefik/v3@$v: no $f in the module"; return 1; }
  echo "$f"
}

# router_crds: the Gateway API CRDs of the release Traefik speaks, and
# Traefik's own, applied server-side unless this cluster already has these
# exact files (applying them unchanged still costs seconds).
router_crds() {
  local crds traefik sum
  crds=$("$here/build-router.sh" --crds) || die "finding the Gateway API CRDs failed"
  traefik=$(traefik_crds) || die "finding Traefik's CRDs failed"
  sum=$(cat "$crds"/*.yaml "$traefik" | sha256sum | cut -c1-16)
  if [ "$(cat "$dir/gateway-crds" 2>/dev/null)" = "$sum" ] &&
    kctl get -f "$crds" -o name >/dev/null 2>&1 && kctl get -f "$traefik" -o name >/dev/null 2>&1; then
    return 0
  fi
  kapply -f "$crds" || die "applying the Gateway API CRDs from $crds failed"
  kapply -f "$traefik" || die "applying Traefik's CRDs from $traefik failed"
  kctl wait --for condition=Established --timeout 60s -f "$crds" -f "$traefik" >/dev/null ||
    die "the Gateway API and Traefik CRDs are not established"
  echo "$sum" > "$dir/gateway-crds"
}

# cert-manager's CRDs (Certificate, CertificateRequest, Issuer,
# ClusterIssuer), from the main module of the release pinned here (its
# deploy/crds are the Helm chart's CRDs without the templating), checked
# against the pinned module hash. Only the CRDs: cert-manager's controller,
# webhook and cainjector are separate modules the proxy does not serve, so
# nothing here issues a certificate; tug's Certificates stay without status
# unless a test writes one.
certmanager_version=v1.21.2
certmanager_sum=h1:UWgoYM+KLNtRlqmoWOKjKBOBUPVHeepQ6/ac3ERJW68=
certmanager_crds() {
  local tmp json mod sum files=() f
  tmp=$(mktemp -d)
  json=$(cd "$tmp" && GOFLAGS= GOTOOLCHAIN=local go mod download -json "github.com/cert-manager/cert-manager@$certmanager_version") ||
    { rm -rf "$tmp"; die "downloading github.com/cert-manager/cert-manager@$certmanager_version failed"; }
  rm -rf "$tmp"
  mod=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json")
  [ "$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p' <<<"$json")" = "$certmanager_sum" ] ||
    die "github.com/cert-manager/cert-manager@$certmanager_version: its hash is not the pinned $certmanager_sum"
  for f in certificates certificaterequests issuers clusterissuers; do
    [ -f "$mod/deploy/crds/cert-manager.io_$f.yaml" ] || die "no deploy/crds/cert-manager.io_$f.yaml in $mod"
    files+=(-f "$mod/deploy/crds/cert-manager.io_$f.yaml")
  done
  sum=$(echo "$certmanager_version $certmanager_sum" | sha256sum | cut -c1-16)
  if [ "$(cat "$dir/certmanager-crds" 2>/dev/null)" = "$sum" ] &&
    kctl get "${files[@]}" -o name >/dev/null 2>&1; then
    return 0
  fi
  kapply "${files[@]}" || die "applying cert-manager's CRDs from $mod/deploy/crds failed"
  kctl wait --for condition=Established --timeout 60s "${files[@]}" >/dev/null ||
    die "cert-manager's CRDs are not established"
  echo "$sum" > "$dir/certmanager-crds"
}

# apps_cert: the wildcard certificate of the apps domain, signed by the
# cluster CA; made again when the domain changed or it expires within a day.
apps_cert() {
  if ! openssl x509 -in "$pki/apps.crt" -noout -checkend 86400 >/dev/null 2>&1 ||
    ! openssl x509 -in "$pki/apps.crt" -noout -ext subjectAltName 2>/dev/null | grep -qF "DNS:*.$apps_domain"; then
    cert apps "*.$apps_domain" "" "DNS:*.$apps_domain"
  fi
}

# router_yaml: what the router serves from: the GatewayClass, the
# IngressClass, and the Gateway with the apps certificate.
router_yaml() {
  # Each listener's port equals its entry point's: Traefik gives a listener
  # the entry point whose address ends in the listener's port.
  cat <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $router_ns, labels: {tug.dev/local-cluster: "true"}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: $gateway_class, labels: {tug.dev/local-cluster: "true"}}
spec:
  controllerName: traefik.io/gateway-controller
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: $ingress_class, labels: {tug.dev/local-cluster: "true"}}
spec:
  controller: traefik.io/ingress-controller
---
apiVersion: v1
kind: Secret
type: kubernetes.io/tls
metadata: {name: apps-tls, namespace: $router_ns, labels: {tug.dev/local-cluster: "true"}}
data:
  tls.crt: $(base64 -w0 "$pki/apps.crt")
  tls.key: $(base64 -w0 "$pki/apps.key")
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: $gateway_name, namespace: $router_ns, labels: {tug.dev/local-cluster: "true"}}
spec:
  gatewayClassName: $gateway_class
  listeners:
  - name: http
    protocol: HTTP
    port: 80
    hostname: "*.$apps_domain"
    allowedRoutes: {namespaces: {from: All}}
  # domains added with 'tug domain add': any host, over HTTP (a host with
  # a certificate of its own is served by an Ingress's TLS: a Gateway
  # takes no listener from an app)
  - name: domains
    protocol: HTTP
    port: 80
    allowedRoutes: {namespaces: {from: All}}
  - name: https
    protocol: HTTPS
    port: 443
    hostname: "*.$apps_domain"
    tls:
      mode: Terminate
      certificateRefs: [{kind: Secret, name: apps-tls}]
    allowedRoutes: {namespaces: {from: All}}
EOF
}

# router_args BIN: the router's command line, one argument a line. No entry
# point listens beyond the router's host-only address; without the two
# --global flags Traefik calls out to the internet. The kubernetescrd
# provider serves Traefik's Middlewares (an app's allow list), which
# HTTPRoutes name in ExtensionRef filters and Ingresses in an annotation.
router_args() {
  printf '%s\n' "$1" \
    --global.checknewversion=false --global.sendanonymoususage=false \
    "--entryPoints.web.address=$router_ip:80" "--entryPoints.websecure.address=$router_ip:443" --entryPoints.websecure.http.tls=true \
    --entryPoints.web.transport.lifeCycle.graceTimeOut=2s --entryPoints.websecure.transport.lifeCycle.graceTimeOut=2s \
    --providers.kubernetesgateway=true "--providers.kubernetesgateway.statusAddress.ip=$router_ip" \
    --providers.kubernetescrd=true \
    --providers.kubernetesingress=true "--providers.kubernetesingress.ingressEndpoint.ip=$router_ip" \
    --log.level=INFO --log.nocolor=true --accesslog=true "--accesslog.filepath=$logs/router-access.log"
}

# start_router BIN: (re)start the router unless it already runs with these
# arguments.
start_router() {
  local args root argv=()
  args=$(router_args "$1")
  if alive router && [ "$(cat "$dir/router.args" 2>/dev/null)" = "$args" ]; then return 0; fi
  if alive router; then
    say "restarting the router: its command line changed"
    stop_router
  fi
  ip addr replace "$router_ip/32" dev "$host_bridge"
  router_firewall
  root=$(cgroup2_root)
  echo "$args" > "$dir/router.args"
  mapfile -t argv <<<"$args"
  # The shell joins the cgroup, then becomes Traefik, so every socket the
  # router opens is under the egress rule. Proxy variables are dropped: the
  # router dials its backends itself.
  start router env -u KUBERNETES_SERVICE_HOST -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY \
    -u http_proxy -u https_proxy -u all_proxy KUBECONFIG="$kubeconfig" \
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$root/$router_cgroup" "${argv[@]}"
}

stop_router() {
  local pid deadline
  pid=$(cat "$pids/router.pid" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + 10 ))
  while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pids/router.pid"
}

# check_router_listeners: the router listens on its host-only address only.
check_router_listeners() {
  local pid bad
  pid=$(cat "$pids/router.pid")
  bad=$(ss -Hltnp 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | grep -v "^$router_ip:" || true)
  [ -z "$bad" ] || fail router "the router listens beyond $router_ip: $bad"
}

# image_path NAME: the name of test image NAME.tar without its host, as the
# local registry holds it (localhost/tug/buildkit:v1 -> tug/buildkit:v1).
image_path() {
  local ref
  ref=$(tar -xOf "$images/$1.tar" index.json | grep -o '"io.containerd.image.name":"[^"]*"' | head -1 | cut -d'"' -f4)
  case "${ref%%/*}" in
    localhost | *.* | *:*) echo "${ref#*/}" ;;
    *) echo "$ref" ;;
  esac
}

# image_ref NAME: test image NAME in the local registry by digest (the
# registry keeps the digest the image has in its tar). By digest, not by
# tag: a node that pulled an earlier build under the same tag (a changed
# build agent, `up` on a running cluster) would run that one again.
image_ref() {
  local path digest
  path=$(image_path "$1")
  digest=$(tar -xOf "$images/$1.tar" index.json | grep -o '"digest":"sha256:[0-9a-f]*"' | head -1 | cut -d'"' -f4)
  echo "$registry_addr/${path%:*}@$digest"
}

# settings_yaml: what this cluster offers every app, where every user of it
# reads it (kube-public, readable by any authenticated user): the Gateway,
# the apps domain, and the build images in the local registry.
settings_yaml() {
  cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: tug-cluster-settings, namespace: kube-public, labels: {tug.dev/local-cluster: "true"}}
data:
  gateway: $router_ns/$gateway_name
  appsDomain: $apps_domain
  ingressClass: $ingress_class
  router: traefik
  buildkitImage: $(image_ref buildkit)
  buildAgentImage: $(image_ref tug-build)
  defaultBuilder: $(image_ref builder)
  # the backing services' images (test/images/services), for the plans of
  # docs/services.md: built from Debian's packages, as no public registry
  # is reachable here
  services.postgres.image.15: $(image_ref postgres)
  services.redis.image.7: $(image_ref redis)
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tug-cluster-settings-reader, namespace: kube-public, labels: {tug.dev/local-cluster: "true"}}
rules:
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [tug-cluster-settings]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tug-cluster-settings-reader, namespace: kube-public, labels: {tug.dev/local-cluster: "true"}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tug-cluster-settings-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}
EOF
}

# ensure_router BIN: the router's objects and the cluster settings exist,
# the router runs, its Gateway is programmed and it answers on its address.
# Idempotent: `up` on a running cluster calls it.
ensure_router() {
  router_crds
  certmanager_crds
  apps_cert
  { router_yaml; echo ---; settings_yaml; } | kapply -f - ||
    die "applying the router's objects and the cluster settings failed"
  start_router "$1"
  wait_for router 60 gateway_programmed
  wait_for router 30 router_up
  check_router_listeners
}

# service_images_current: the postgres and redis images in $images are
# what test/images/services/build.sh makes from this checkout.
service_images_current() {
  local svc t
  svc=$("$repo/test/images/services/build.sh" --cached) || return 1
  for t in $service_tars; do
    [ "$svc/$t.tar" -ef "$images/$t.tar" ] || cmp -s "$svc/$t.tar" "$images/$t.tar" || return 1
  done
}

# print_service_images: the backing-service images and their sample app in
# the local registry, by digest, one "NAME REF" a line (for the demo, the
# e2e tests and plans). Builds nothing: says what to run when they are not
# built or not pushed.
print_service_images() {
  local bk t ref rest
  bk=$("$repo/test/images/buildkit/build.sh" --cached) ||
    die "the test images are not built: run cluster.sh up (or ensure-registry on a running cluster)"
  images=$cache/images/$(images_key "$bk")
  service_images_current ||
    say "warning: test/images/services changed since these images were built; run cluster.sh ensure-registry for the current ones"
  for t in postgres redis dbapp; do
    [ -f "$images/$t.tar" ] || die "no $t image in $images: run cluster.sh ensure-registry (on a running cluster) or up"
    ref=$(image_ref "$t")
    rest=${ref#*/}
    curl -sfI -o /dev/null --max-time 3 -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
      "http://$registry_addr/v2/${rest%@*}/manifests/${rest#*@}" ||
      die "the registry $registry_addr does not hold $ref: run cluster.sh ensure-registry"
    echo "$t $ref"
  done
}

# ---------------------------------------------------------------- up

is_up() {
  [ -f "$kubeconfig" ] && alive kube-apiserver && alive etcd &&
    curl -sfk --max-time 3 --cert "$pki/admin.crt" --key "$pki/admin.key" "$apiserver/readyz" >/dev/null
}

nodes_ready() {
  local want=$1 ready
  ready=$(kctl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True)
  [ "$ready" -ge "$want" ]
}

up() {
  local nodes=${1:-1}
  case "$nodes" in 1 | 2) ;; *) die "NODES must be 1 or 2, not $nodes" ;; esac
  [ "$(id -u)" -eq 0 ] || die "the local cluster needs root (network, mounts, cgroups)"
  if is_up; then
    local have running
    have=$(cat "$dir/nodes" 2>/dev/null || echo 1)
    running=$(running_version)
    if [ "$running" != "$k8s_version" ]; then
      say "up with Kubernetes ${running:-of unknown version}, $k8s_version wanted: restarting"
    elif [ "$have" -ge "$nodes" ]; then
      say "already up ($have node(s), Kubernetes $running); kubeconfig: $kubeconfig"
      k8s=$(running_bin)
      ensure_additions
      return 0
    else
      say "up with $have node(s), $nodes wanted: restarting"
    fi
  fi
  local t0
  t0=$(date +%s.%N)
  need_packages
  local new_k8s router_out router_build router_bin
  # The router builds alongside Kubernetes: on a cold machine both are
  # minutes of compiling, and each build leaves cores idle while it links.
  router_out=$(mktemp)
  "$here/build-router.sh" >"$router_out" &
  router_build=$!
  cnb_prebuild
  metrics_build_start
  service_images_start
  provisioner_build_start
  dbapp_warm_start
  new_k8s=$("$here/build-localk8s.sh") || die "building the Kubernetes $k8s_version binary failed"
  build_images
  wait "$router_build" || die "building the router failed"
  router_bin=$(cat "$router_out")
  rm -f "$router_out"
  # Whatever an earlier, killed cluster left behind goes first (torn down
  # with its own binary: kube-proxy --cleanup of its version).
  down quiet
  k8s=$new_k8s
  mkdir -p "$dir" "$logs" "$pids"
  echo "$nodes" > "$dir/nodes"
  echo "$k8s_version" > "$dir/k8s-version"
  echo "$k8s" > "$dir/k8s-bin"
  echo "$repo" > "$dir/started-by"
  make_pki "$nodes"
  setup_network "$nodes"
  start_etcd
  wait_for etcd 30 curl -sf "http://127.0.0.1:$etcd_port/health"
  local n
  for n in $(seq 1 "$nodes"); do make_node_cgroups "$n"; done
  start_control_plane
  ensure_registry
  ensure_provisioner
  for n in $(seq 1 "$nodes"); do
    start_node "$n"
    import_images "$n"
  done
  start_proxy
  for n in $(seq 1 "$nodes"); do
    wait_for "kubelet-node$n" 90 node_is_ready "node$n"
  done
  wait_for kube-controller-manager 60 kctl -n default get serviceaccount default
  alive kube-scheduler || fail kube-scheduler "kube-scheduler exited"
  alive kube-proxy || fail kube-proxy "kube-proxy exited"
  ensure_router "$router_bin"
  ensure_cnb_builder
  ensure_metrics
  say "up: $nodes node(s) Ready in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")s; logs in $logs"
  say "kubeconfig: $kubeconfig"
  say "registry: $registry_addr"
  say "volumes: StorageClass $storage_class (default), in $volumes_dir"
  say "router: $router_ip (HTTP :80, HTTPS :443; apps under *.$apps_domain)"
}

# ensure_additions: on a running cluster, what later versions of this
# script add without a restart: new test images, the registry, the router
# and the cluster settings.
ensure_additions() {
  local have n router_bin
  have=$(cat "$dir/nodes" 2>/dev/null || echo 1)
  build_images
  for n in $(seq 1 "$have"); do ensure_images "$n"; done
  ensure_registry
  ensure_provisioner
  say "volumes: StorageClass $storage_class (default), in $volumes_dir"
  grep -q config_path "$dir/node1/containerd.toml" ||
    say "the nodes' containerd predates the registry setting: restart the cluster (down, up) so the kubelets pull from $registry_addr"
  say "registry: $registry_addr"
  router_bin=$("$here/build-router.sh") || die "building the router failed"
  ensure_router "$router_bin"
  say "router: $router_ip (HTTP :80, HTTPS :443; apps under *.$apps_domain)"
  ensure_cnb_builder
  ensure_metrics
}

# running_version: the Kubernetes version of the running cluster (recorded by
# up; asked of the apiserver for a cluster started before it was recorded).
running_version() {
  if [ -s "$dir/k8s-version" ]; then
    cat "$dir/k8s-version"
    return
  fi
  curl -sfk --max-time 3 --cert "$pki/admin.crt" --key "$pki/admin.key" "$apiserver/version" 2>/dev/null |
    sed -n 's/^ *"gitVersion": *"\([^"]*\)".*/\1/p'
}

# running_bin: the binary the running cluster was started with (its kubectl
# and kube-proxy --cleanup match it), else the cached one of this run's version.
running_bin() {
  local b
  b=$(cat "$dir/k8s-bin" 2>/dev/null || true)
  if [ -n "$b" ] && [ -x "$b" ]; then echo "$b"; return; fi
  K8S_VERSION=$(running_version) "$here/build-localk8s.sh" --cached 2>/dev/null ||
    "$here/build-localk8s.sh" --cached 2>/dev/null || true
}

node_is_ready() {
  [ "$(kctl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# ---------------------------------------------------------------- down

kill_recorded() {
  local f pid
  for f in "$pids"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
  local deadline=$(( $(date +%s) + 15 ))
  for f in "$pids"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

# Processes that outlive their parent: containerd shims (matched by our
# containerd's socket path) and the containers in our nodes' cgroups.
kill_leftovers() {
  local pid h n
  for pid in $(pgrep -f "containerd-shim.*$dir/" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
  for n in 1 2; do
    for h in /sys/fs/cgroup/*/node$n; do
      [ -d "$h" ] || continue
      find "$h" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done
    done
  done
  # the router's cgroup holds only the router
  local root
  root=$(cgroup2_root)
  if [ -n "$root" ] && [ -f "$root/$router_cgroup/cgroup.procs" ]; then
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$root/$router_cgroup/cgroup.procs"
  fi
  # the kube-proxy, kubelets and router of a cluster whose pid files are gone
  for pid in $(pgrep -f "(localk8s|kubelet|kube-proxy|kube-apiserver|kube-controller-manager|kube-scheduler|traefik|metrics-server|provisioner).*$dir/" 2>/dev/null); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in $(pgrep -f "etcd --name tug-local" 2>/dev/null) $(pgrep -f "containerd --config $dir/" 2>/dev/null); do
    kill -KILL "$pid" 2>/dev/null || true
  done
}

remove_cgroups() {
  local n h i
  for n in 1 2; do
    for h in /sys/fs/cgroup/*/node$n; do
      [ -d "$h" ] || continue
      for i in 1 2 3 4 5; do
        find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
        [ -d "$h" ] || break
        sleep 0.2
      done
    done
  done
}

unmount_all() {
  local m
  # deepest first; kubelet and containerd mounts (volumes, rootfs, shm) live under $dir
  for m in $(awk -v d="$dir/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  # the kubelet links every container's log into /var/log/containers
  local l
  for l in /var/log/containers/*.log; do
    [ -L "$l" ] || continue
    case "$(readlink "$l")" in "$dir"/*) rm -f "$l" ;; esac
  done
  # pod network namespaces live in /var/run/netns as cni-<uuid>
  for m in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ {print $1}'); do
    ip netns delete "$m" 2>/dev/null || true
  done
}

teardown_network() {
  local n
  if [ -n "${k8s:-}" ] && [ -x "$k8s" ]; then
    "$k8s" kube-proxy --cleanup >/dev/null 2>&1 || "$k8s" kube-proxy --cleanup >/dev/null 2>&1 || true
  fi
  ip addr delete "$router_ip/32" dev "$host_bridge" 2>/dev/null || true
  remove_router_firewall
  iptables -D FORWARD -j "$fw_chain" 2>/dev/null || true
  iptables -F "$fw_chain" 2>/dev/null || true
  iptables -X "$fw_chain" 2>/dev/null || true
  # What kube-proxy --cleanup leaves: the kubelets' own chains (KUBE-FIREWALL,
  # KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT) and any CNI- chains.
  local ipt table rule chain
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    for table in filter nat mangle; do
      "$ipt-save" -t "$table" 2>/dev/null | grep -E '^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (KUBE|CNI)-' | while read -r rule; do
        # shellcheck disable=SC2086 # the rule is a list of words to pass on
        "$ipt" -t "$table" -D ${rule#-A } 2>/dev/null || true
      done || true
      for chain in $("$ipt-save" -t "$table" 2>/dev/null | awk '/^:(KUBE|CNI)-/ {print substr($1, 2)}'); do
        "$ipt" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$ipt-save" -t "$table" 2>/dev/null | awk '/^:(KUBE|CNI)-/ {print substr($1, 2)}'); do
        "$ipt" -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
  for n in 1 2; do ip link delete "$(node_bridge "$n")" 2>/dev/null || true; done
  ip link delete "$host_bridge" 2>/dev/null || true
  if [ -f "$dir/sysctl.orig" ]; then
    local key value
    while IFS== read -r key value; do
      echo "$value" > "/proc/sys/${key//.//}" 2>/dev/null || true
    done < "$dir/sysctl.orig"
    rm -f "$dir/sysctl.orig"
  fi
}

down() {
  local quiet=${1:-}
  [ -d "$dir" ] || { [ -n "$quiet" ] || say "not running"; return 0; }
  local t0
  t0=$(date +%s)
  k8s=${k8s:-$(running_bin)}
  kill_recorded
  kill_leftovers
  unmount_all
  remove_cgroups
  teardown_network
  # keep nothing of the old cluster: a new one starts from empty state
  rm -rf "$dir" 2>/dev/null || { sleep 1; unmount_all; rm -rf "$dir"; }
  [ -n "$quiet" ] || say "down in $(( $(date +%s) - t0 ))s"
}

# ---------------------------------------------------------------- extra apiservers

# An extra kube-apiserver on 127.0.0.1:PORT against the same etcd, with the
# running apiserver's own command line (its binary, certificates and flags)
# but for the port: a second control-plane instance, as in an HA setup
# (--endpoint-reconciler-type none keeps it from touching the kubernetes
# Service) and its own host name. A test points one tug at it and stops and
# starts it, so an API server restart hits that tug and nothing else. Its
# PID file is in pids/ and its flags name $dir, so down and check-clean
# cover it.

extra_name() { echo "kube-apiserver-$1"; }

extra_port() {
  case "${1:-}" in '' | *[!0-9]*) die "PORT must be a number, not '${1:-}'" ;; esac
  { [ "$1" -ge 1024 ] && [ "$1" -le 65535 ] && [ "$1" -ne "$api_port" ]; } ||
    die "PORT must be in 1024-65535 and not the cluster's own apiserver port $api_port"
}

extra_apiserver_start() {
  local port=$1 name pid arg argv=() flags=() port_next=
  extra_port "$port"
  is_up || die "the cluster is not up"
  name=$(extra_name "$port")
  if ! alive "$name"; then
    ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && die "port $port is taken"
    pid=$(cat "$pids/kube-apiserver.pid")
    mapfile -d '' -t argv < "/proc/$pid/cmdline"
    [ "${argv[1]:-}" = kube-apiserver ] || die "PID $pid is not the cluster's kube-apiserver"
    for arg in "${argv[@]:1}"; do
      if [ -n "$port_next" ]; then
        arg=$port port_next=
      elif [ "$arg" = --secure-port ]; then
        port_next=1
      elif [[ $arg == --secure-port=* ]]; then
        arg=--secure-port=$port
      fi
      flags+=("$arg")
    done
    has_aggregation_flags "${flags[@]}" || mapfile -t -O "${#flags[@]}" flags < <(aggregation_flags)
    # Its own host name (a UTS namespace of its own): an apiserver's identity
    # Lease is named after the host, and two instances must not share one.
    start "$name" unshare --uts sh -c 'hostname "$0" && exec "$@"' "tug-$name" "${argv[0]}" "${flags[@]}"
  fi
  wait_for "$name" 120 curl -sf --max-time 3 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$port/readyz"
  say "extra apiserver ready: https://127.0.0.1:$port (log $logs/$name.log)"
}

# extra_apiserver_stop PORT SIGNAL: signal it and wait until it is gone.
extra_apiserver_stop() {
  local port=$1 sig=$2 name pid deadline
  extra_port "$port"
  name=$(extra_name "$port")
  pid=$(cat "$pids/$name.pid" 2>/dev/null) || { say "no extra apiserver on port $port"; return 0; }
  kill "-$sig" "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + 30 ))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || { kill -KILL "$pid" 2>/dev/null || true; }
    sleep 0.05
  done
  rm -f "$pids/$name.pid"
  say "extra apiserver on port $port stopped ($sig)"
}

# ---------------------------------------------------------------- checks

check_clean() {
  local left=()
  pgrep -f "$dir/" >/dev/null 2>&1 && left+=("processes: $(pgrep -af "$dir/" | cut -c1-120 | tr '\n' ';')")
  pgrep -f "etcd --name tug-local" >/dev/null 2>&1 && left+=("etcd still running")
  pgrep -f "kube-apiserver .*$dir/" >/dev/null 2>&1 && left+=("kube-apiserver still running (extra ones included): $(pgrep -f "kube-apiserver .*$dir/" | tr '\n' ' ')")
  ss -Hltn "sport = :$registry_port" 2>/dev/null | grep -q . && left+=("a listener on the registry port $registry_port")
  [ -z "$(check_metrics_clean)" ] || left+=("$(check_metrics_clean)")
  ss -Hltn "src $router_ip" 2>/dev/null | grep -q . && left+=("a listener on the router's address $router_ip")
  ip -o addr show 2>/dev/null | grep -qF " $router_ip/" && left+=("the router's address $router_ip")
  local cg2
  cg2=$(cgroup2_root)
  [ -n "$cg2" ] && [ -d "$cg2/$router_cgroup" ] && left+=("the router's cgroup $cg2/$router_cgroup")
  awk -v d="$dir/" 'index($5, d) == 1' /proc/self/mountinfo | grep -q . && left+=("mounts under $dir")
  # a killed service image build's (test/images/services/build.sh removes them at its next run)
  awk -v d="$cache/" 'index($5, d) == 1' /proc/self/mountinfo | grep -q . &&
    left+=("mounts under $cache: $(awk -v d="$cache/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | head -3 | tr '\n' ' ')")
  ip netns list 2>/dev/null | grep -q '^cni-' && left+=("network namespaces: $(ip netns list | awk '/^cni-/ {print $1}' | tr '\n' ' ')")
  local i
  for i in "$host_bridge" tugcni1 tugcni2; do
    ip link show "$i" >/dev/null 2>&1 && left+=("interface $i")
  done
  local ipt
  for ipt in iptables ip6tables; do
    command -v "$ipt-save" >/dev/null || continue
    "$ipt-save" 2>/dev/null | grep -qE "KUBE-|CNI-|$fw_chain|$router_chain|$router_in_chain" &&
      left+=("$ipt: $("$ipt-save" | grep -E "KUBE-|CNI-|$fw_chain|$router_chain|$router_in_chain" | head -3 | tr '\n' ' ')")
  done
  ls -d /sys/fs/cgroup/*/node[12] >/dev/null 2>&1 && left+=("cgroups node1/node2")
  [ -d "$dir" ] && left+=("state folder $dir")
  local links
  links=$(find /var/log/containers -maxdepth 1 -lname "$dir/*" 2>/dev/null | head -3 || true)
  [ -n "$links" ] && left+=("log links in /var/log/containers: $links")
  if [ ${#left[@]} -gt 0 ]; then
    say "left behind:"
    printf '  %s\n' "${left[@]}" >&2
    return 1
  fi
  say "clean: no process, mount, namespace, interface, rule, cgroup or folder left"
}

case "${1:-}" in
  up) up "${2:-${NODES:-1}}" ;;
  down) down ;;
  status)
    is_up || { say "down"; exit 1; }
    k8s=$(running_bin)
    [ -n "$k8s" ] || die "up, but no built Kubernetes binary to ask the nodes with"
    nodes_ready "$(cat "$dir/nodes" 2>/dev/null || echo 1)" || { say "up, but not every node is Ready"; exit 1; }
    say "up" ;;
  kubeconfig) echo "$kubeconfig" ;;
  registry) echo "$registry_addr" ;;
  service-images) print_service_images ;;
  router) echo "$router_ip" ;;
  ensure-registry | ensure-router) # the additive part of up, on a running cluster only
    is_up || die "the cluster is not up"
    k8s=$(running_bin)
    [ -n "$k8s" ] || die "up, but no built Kubernetes binary to apply objects with"
    ensure_additions ;;
  ensure-cnb-builder) # only the CNB test builder, on a running cluster
    is_up || die "the cluster is not up"
    registry_up || die "the registry does not answer: cluster.sh ensure-registry first"
    ensure_cnb_builder ;;
  ensure-cert-manager-crds)
    is_up || die "the cluster is not up"
    k8s=$(running_bin)
    [ -n "$k8s" ] || die "up, but no built Kubernetes binary to apply objects with"
    certmanager_crds
    say "cert-manager's CRDs ($certmanager_version) are served" ;;
  ensure-metrics)
    is_up || die "the cluster is not up"
    k8s=$(running_bin)
    [ -n "$k8s" ] || die "up, but no built Kubernetes binary to apply objects with"
    ensure_metrics "${2:-}" ;;
  check-clean) check_clean ;;
  apiserver) # an extra kube-apiserver of the running cluster (see extra_apiserver_start)
    case "${2:-}" in
      start) extra_apiserver_start "${3:-}" ;;
      stop) extra_apiserver_stop "${3:-}" TERM ;;
      kill) extra_apiserver_stop "${3:-}" KILL ;;
      *) echo "usage: $0 apiserver start|stop|kill PORT" >&2; exit 2 ;;
    esac ;;
  *) echo "usage: $0 up [NODES]|down|status|kubeconfig|registry|service-images|router|ensure-registry|ensure-router|ensure-cnb-builder|ensure-cert-manager-crds|ensure-metrics|check-clean|apiserver start|stop|kill PORT" >&2; exit 2 ;;
esac
