# The metrics API of the local cluster, sourced by cluster.sh (its globals
# and helpers: dir, pki, pids, logs, here, start, alive, wait_for, cert,
# kctl, kapply, node_ip, say, die, fail).
#
# metrics.k8s.io is an aggregated API: the kube-apiserver proxies it to
# metrics-server (built from modules by build-metrics.sh), which runs as a
# host process on a host-only address (like the registry), reads the
# kubelets' /metrics/resource, and is registered by an APIService whose
# Service has no selector: an EndpointSlice points it at the host address.
# The apiserver authenticates its proxied requests to metrics-server with a
# front-proxy client certificate, signed by a CA of its own (the
# request-header CA), so only the apiserver can assert a user to it.

metrics_port=14443
metrics_addr=$(node_ip 1)

# metrics_pki: the front-proxy CA and client certificate the apiserver
# proxies with, and metrics-server's certificate (serving, as the Service's
# DNS name and its host address, and client, to the apiserver and the
# kubelets). Made only when missing, so a running cluster can gain them.
metrics_pki() {
  if [ ! -f "$pki/front-proxy-client.crt" ]; then
    openssl ecparam -name prime256v1 -genkey -noout -out "$pki/front-proxy-ca.key" 2>/dev/null
    openssl req -x509 -new -key "$pki/front-proxy-ca.key" -subj "/CN=tug-local-front-proxy-ca" -days 365 -sha256 \
      -out "$pki/front-proxy-ca.crt" 2>/dev/null
    openssl ecparam -name prime256v1 -genkey -noout -out "$pki/front-proxy-client.key" 2>/dev/null
    openssl req -new -key "$pki/front-proxy-client.key" -subj "/CN=front-proxy-client" -out "$pki/front-proxy-client.csr" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' > "$pki/front-proxy-client.ext"
    openssl x509 -req -in "$pki/front-proxy-client.csr" -CA "$pki/front-proxy-ca.crt" -CAkey "$pki/front-proxy-ca.key" \
      -CAcreateserial -days 365 -sha256 -extfile "$pki/front-proxy-client.ext" -out "$pki/front-proxy-client.crt" 2>/dev/null
    rm -f "$pki/front-proxy-client.csr" "$pki/front-proxy-client.ext"
  fi
  if [ ! -f "$pki/metrics-server.crt" ]; then
    cert metrics-server system:metrics-server "" \
      "DNS:metrics-server.kube-system.svc,DNS:metrics-server.kube-system.svc.cluster.local,IP:$metrics_addr"
    write_kubeconfig "$dir/metrics-server.kubeconfig" metrics-server
  fi
}

# aggregation_flags: the kube-apiserver's flags for the aggregation layer,
# one a line. Proxied requests go straight to the EndpointSlice's address
# (aggregator routing), not through the Service's cluster IP.
aggregation_flags() {
  printf '%s\n' \
    --requestheader-client-ca-file "$pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-extra-headers-prefix X-Remote-Extra- --requestheader-group-headers X-Remote-Group \
    --requestheader-username-headers X-Remote-User \
    --proxy-client-cert-file "$pki/front-proxy-client.crt" --proxy-client-key-file "$pki/front-proxy-client.key" \
    --enable-aggregator-routing=true
}

# has_aggregation_flags ARG...: the apiserver command line ARG... has them.
has_aggregation_flags() {
  local a
  for a in "$@"; do
    case "$a" in --proxy-client-cert-file | --proxy-client-cert-file=*) return 0 ;; esac
  done
  return 1
}

# apiserver_aggregates: the running kube-apiserver was started with them.
apiserver_aggregates() {
  local pid argv=()
  pid=$(cat "$pids/kube-apiserver.pid" 2>/dev/null) || return 1
  mapfile -d '' -t argv < "/proc/$pid/cmdline" 2>/dev/null || return 1
  has_aggregation_flags "${argv[@]}"
}

# metrics_build_start: build metrics-server in the background (up starts it
# alongside the Kubernetes build); ensure_metrics waits for it.
metrics_build_start() {
  metrics_build_out=$(mktemp)
  "$here/build-metrics.sh" >"$metrics_build_out" &
  metrics_build_pid=$!
}

# metrics_bin: the binary, from the background build when one was started.
metrics_bin() {
  if [ -n "${metrics_build_pid:-}" ]; then
    wait "$metrics_build_pid" || die "building metrics-server failed"
    cat "$metrics_build_out"
    rm -f "$metrics_build_out"
    metrics_build_pid=
    return
  fi
  "$here/build-metrics.sh" || die "building metrics-server failed"
}

# metrics_args BIN: metrics-server's command line, one argument a line. It
# verifies the kubelets' serving certificates with the cluster CA and
# authenticates to them with its own certificate. The discovery paths are
# open to anyone the apiserver lets through (they name the resources, no
# data; the OpenAPI schemas alike), so an apiserver that proxies without a client certificate still
# sees the group served instead of failing its discovery (which would hold
# namespace deletion); the data itself needs a user the front proxy asserts.
metrics_args() {
  printf '%s\n' "$1" \
    --kubeconfig "$dir/metrics-server.kubeconfig" \
    --authentication-kubeconfig "$dir/metrics-server.kubeconfig" --authorization-kubeconfig "$dir/metrics-server.kubeconfig" \
    --bind-address "$metrics_addr" --secure-port "$metrics_port" \
    --tls-cert-file "$pki/metrics-server.crt" --tls-private-key-file "$pki/metrics-server.key" \
    --kubelet-certificate-authority "$pki/ca.crt" \
    --kubelet-client-certificate "$pki/metrics-server.crt" --kubelet-client-key "$pki/metrics-server.key" \
    --kubelet-preferred-address-types InternalIP --kubelet-use-node-status-port \
    --metric-resolution 15s --profiling=false \
    --authorization-always-allow-paths /healthz,/livez,/readyz,/apis,/apis/metrics.k8s.io,/apis/metrics.k8s.io/v1beta1,/openapi/* \
    --v 1
}

metrics_server_up() {
  curl -sf --max-time 2 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://$metrics_addr:$metrics_port/readyz" >/dev/null
}

# metrics_yaml: the RBAC metrics-server needs (read pods and nodes and the
# kubelets' metrics, delegate authentication and authorization) and the
# aggregated reader role (view, edit and admin include it, as upstream's
# manifest has it).
metrics_yaml() {
  cat <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:metrics-server", labels: {tug.dev/local-cluster: "true"}}
rules:
- apiGroups: [""]
  resources: [nodes/metrics]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:metrics-server", labels: {tug.dev/local-cluster: "true"}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:metrics-server"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "metrics-server:system:auth-delegator", labels: {tug.dev/local-cluster: "true"}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: metrics-server-auth-reader, namespace: kube-system, labels: {tug.dev/local-cluster: "true"}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: "system:aggregated-metrics-reader"
  labels:
    tug.dev/local-cluster: "true"
    rbac.authorization.k8s.io/aggregate-to-view: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
- apiGroups: [metrics.k8s.io]
  resources: [pods, nodes]
  verbs: [get, list, watch]
EOF
}

# metrics_registration_yaml: the Service (no selector) whose EndpointSlice
# points at metrics-server's host address, and the APIService that makes
# the apiserver proxy metrics.k8s.io to it.
metrics_registration_yaml() {
  cat <<EOF
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system, labels: {tug.dev/local-cluster: "true"}}
spec:
  ports: [{name: https, port: 443, targetPort: $metrics_port, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels:
    tug.dev/local-cluster: "true"
    kubernetes.io/service-name: metrics-server
    endpointslice.kubernetes.io/managed-by: tug-cluster
addressType: IPv4
ports: [{name: https, port: $metrics_port, protocol: TCP}]
endpoints: [{addresses: ["$metrics_addr"], conditions: {ready: true}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io, labels: {tug.dev/local-cluster: "true"}}
spec:
  service: {name: metrics-server, namespace: kube-system, port: 443}
  group: metrics.k8s.io
  version: v1beta1
  caBundle: $(base64 -w0 "$pki/ca.crt")
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
}

metrics_available() {
  [ "$(kctl get apiservice v1beta1.metrics.k8s.io -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ]
}

# metrics_served: a LIST of PodMetrics answers through the apiserver (the
# front proxy's certificate accepted, the kubelets scraped once).
metrics_served() { kctl get --raw /apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods >/dev/null; }

# start_metrics_server BIN: (re)start it unless it already runs with these
# arguments.
start_metrics_server() {
  local args argv=()
  args=$(metrics_args "$1")
  if alive metrics-server && [ "$(cat "$dir/metrics-server.args" 2>/dev/null)" = "$args" ]; then return 0; fi
  if alive metrics-server; then
    say "restarting metrics-server: its command line changed"
    kill -TERM "$(cat "$pids/metrics-server.pid")" 2>/dev/null || true
    wait_gone metrics-server 10
  fi
  echo "$args" > "$dir/metrics-server.args"
  mapfile -t argv <<<"$args"
  start metrics-server env -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u http_proxy -u https_proxy -u all_proxy "${argv[@]}"
}

# wait_gone NAME SECONDS: NAME's recorded process has exited (killed after SECONDS).
wait_gone() {
  local pid deadline
  pid=$(cat "$pids/$1.pid" 2>/dev/null) || return 0
  deadline=$(( $(date +%s) + $2 ))
  while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pids/$1.pid"
}

# ensure_metrics [--register]: metrics-server runs and, when the running
# apiserver has the aggregation flags, is registered and serves PodMetrics.
# Idempotent: up, ensure-router and ensure-metrics call it. An apiserver
# started without the flags (a cluster from before them) cannot proxy to it
# until a restart (down, up): nothing is registered then, unless --register
# asks for it, for an extra apiserver started with the flags (cluster.sh
# apiserver start PORT gives it them) to serve the API through.
ensure_metrics() {
  local bin
  bin=$(metrics_bin)
  metrics_pki
  metrics_yaml | kapply -f - || die "applying metrics-server's RBAC failed"
  start_metrics_server "$bin"
  wait_for metrics-server 60 metrics_server_up
  if ! apiserver_aggregates && [ "${1:-}" != --register ]; then
    say "metrics-server runs, but the kube-apiserver was started without the aggregation layer's flags: restart the cluster (down, up) to serve the metrics API"
    return 0
  fi
  metrics_registration_yaml | kapply -f - || die "applying metrics-server's registration failed"
  wait_for metrics-server 60 metrics_available
  if apiserver_aggregates; then
    wait_for metrics-server 60 metrics_served
  fi
  say "metrics API: v1beta1.metrics.k8s.io served by metrics-server on $metrics_addr:$metrics_port"
}

# check_metrics_clean: what check-clean adds: no listener on metrics-server's port.
check_metrics_clean() {
  ss -Hltn "sport = :$metrics_port" 2>/dev/null | grep -q . && echo "a listener on metrics-server's port $metrics_port"
  return 0
}
