#!/usr/bin/env bash
# make demo: bring up the local cluster (when none runs) and show tug's main
# job on it: create an app, deploy, scale, configure, fail safely, roll back.
# It grows with every feature.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
test/cluster/cluster.sh up "${NODES:-2}" # two nodes, as make test needs
make -s build
export PATH=$PWD/bin:$PATH
repo=$PWD
ns=tug-demo
k8s=$(test/cluster/build-localk8s.sh --cached)
# a copy of the admin kubeconfig whose context points at the demo namespace
export KUBECONFIG=/tmp/tug-demo.kubeconfig
cp "$(test/cluster/cluster.sh kubeconfig)" "$KUBECONFIG"
"$k8s" kubectl delete namespace "$ns" --ignore-not-found --wait >/dev/null
"$k8s" kubectl create namespace "$ns" >/dev/null
"$k8s" kubectl config set-context --current --namespace "$ns" >/dev/null

step() { printf '\n\033[1m$ tug %s\033[0m\n' "$*"; tug "$@"; }
expect_fail() { printf '\n\033[1m$ tug %s\033[0m   (fails on purpose)\n' "$*"; tug "$@" || echo "(exit code $?)"; }

step version
step doctor || true

# From source: the build runs in the cluster, the image goes to the local
# registry, and the release records its digest.
registry=$(test/cluster/cluster.sh registry)
site=$(mktemp -d)
cp -a examples/static-site/. "$site"
step app create site --description "a static site built from source"
show_site() { # show_site TEXT: what the site answers once the Service routes to the new units
  local ip body i
  ip=$("$k8s" kubectl get service site -o jsonpath='{.spec.clusterIP}')
  printf '\033[1m$ curl http://%s/\033[0m\n' "$ip"
  for i in $(seq 50); do # kube-proxy takes a moment to route to new units
    body=$(curl -s --max-time 2 "http://$ip/" || true)
    case $body in *"$1"*) break ;; esac
    sleep 0.2
  done
  echo "$body"
}
(cd "$site" && step app deploy site --builder "$registry/tug/builder-static:v1" --repository "$registry/demo/site" -m "from source")
show_site "Hello from a build"

# As users reach it: through the cluster's router. Every web app gets a URL
# under the cluster's apps domain, served by its Gateway over HTTP and over
# HTTPS (the local cluster's wildcard certificate, signed by its CA); nothing
# resolves these names, so curl dials the router (--resolve).
router=$(test/cluster/cluster.sh router)
step app address site
url=$(tug app info site -o 'jsonpath={.urls[0]}')
host=${url#*://}
host=${host%%/*}
if [ -z "$host" ]; then
  echo "demo: app site has no URL: the cluster settings name no Gateway and apps domain ('tug cluster settings show')" >&2
  exit 1
fi
ca=$(mktemp)
"$k8s" kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$ca"
if [ ! -s "$ca" ]; then
  cp "$("$k8s" kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')" "$ca"
fi
show_routed() { # show_routed URL TEXT [CURL ARGS...]: what the router answers for URL; fails the demo unless TEXT
  local u=$1 text=$2 h port body i
  shift 2
  h=${u#*://}; h=${h%%/*}
  port=80; case $u in https:*) port=443 ;; esac
  printf '\033[1m$ curl --resolve %s:%s:%s %s%s\033[0m\n' "$h" "$port" "$router" "${*:+$* }" "$u"
  for i in $(seq 25); do # tug returned once the router served it: this is for a slow machine only
    if body=$(curl -sS --fail --max-time 3 --resolve "$h:$port:$router" "$@" "$u" 2>&1); then
      case $body in *"$text"*) echo "$body"; return 0 ;; esac
    fi
    sleep 0.2
  done
  echo "demo: $u did not answer with \"$text\" through the router at $router: $body" >&2
  exit 1
}
show_routed "http://$host/" "Hello from a build"
show_routed "https://$host/" "Hello from a build" --cacert "$ca"
# A domain of its own, with its own certificate (self-signed here): tug
# serves it through the router's TLS on SNI.
domain=site.demo.test
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=$domain" \
  -addext "subjectAltName=DNS:$domain" -keyout "$site.key" -out "$site.crt" 2>/dev/null
step domain add site "$domain"
show_routed "http://$domain/" "Hello from a build"
step cert add site "$domain" --cert "$site.crt" --key "$site.key"
show_routed "https://$domain/" "Hello from a build" --cacert "$site.crt"
step cert list site
rm -f "$site.key" "$site.crt"
echo "Second edition" > "$site/message.txt"
(cd "$site" && step app deploy site -m "new message")
show_site "Second edition"
step release list site
step release rollback site
show_site "Hello from a build"
rm -rf "$site"

# A Cloud Native Buildpacks builder builds with its own lifecycle (the local
# cluster's test builder: the real lifecycle, shell buildpacks), rootless;
# the image's process types, web and worker, become the app's processes.
hello=$(mktemp -d)
echo "Hello from buildpacks" >"$hello/message.txt"
cnb=$(curl -sfI --max-time 5 -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$registry/v2/tug/cnb-builder/manifests/v1" |
  tr -d '\r' | awk -F': ' 'tolower($1) == "docker-content-digest" {print $2}')
step app create hello --description "built by Cloud Native Buildpacks"
(cd "$hello" && step app deploy hello --builder "$registry/tug/cnb-builder@$cnb" --repository "$registry/demo/hello" --build-env GREETING=hi -m "CNB build")
step unit list hello
rm -rf "$hello"

step app create shop --description "the demo shop"
# A Procfile with a release phase: it runs once per deploy and config change,
# in a one-off unit of the new release, before any unit is replaced.
shop=$(mktemp -d)
printf '%s\n' 'web: sample' 'worker: sample worker' 'release: sh -c "echo migrating for release $TUG_RELEASE, GREETING=$GREETING"' > "$shop/Procfile"
cd "$shop"
step app deploy shop --image localhost/tug/sample:v1 -m "first deploy"
step app scale shop web=3
step unit list shop
step env set shop GREETING=hello
step env get shop
step app deploy shop --image localhost/tug/sample:v2 --dry-run
step app deploy shop --image localhost/tug/sample:v2
expect_fail app deploy shop --image localhost/tug/sample:crash
expect_fail app deploy shop --image localhost/tug/no-such-image:1
step release list shop
step release rollback shop
step app info shop
step app limit set shop -p web --memory 64Mi --cpu 250m
step app stop shop -p worker
# How releases roll out, per app: pace and history change in place (no unit
# restarts); a rollback brings back the settings its release had.
step app settings set shop --max-surge 50% --max-unavailable 0 --history 5
step app settings show shop
step app info shop

# A canary: the new release's web units start beside the deployed ones and
# get a quarter of the requests through the router (a weighted HTTPRoute,
# exact), then all of them once promoted; workers keep the deployed release
# until then.
shop_url=$(tug app info shop -o 'jsonpath={.urls[0]}')version
show_split() { # show_split N: which release answers N requests for the shop's URL through the router
  local h=${shop_url#*://} i
  h=${h%%/*}
  printf '\033[1m$ for i in $(seq %s); do curl -s --resolve %s:443:%s --cacert CA %s; done | sort | uniq -c\033[0m\n' "$1" "$h" "$router" "$shop_url"
  for i in $(seq "$1"); do curl -s --max-time 3 --resolve "$h:443:$router" --cacert "$ca" "$shop_url" || echo "(no answer)"; done | sort | uniq -c
}
step app deploy shop --image localhost/tug/sample:v2 --canary 25% -m "canary of v2"
step release list shop
show_split 40
step release promote shop
show_split 20

# Jobs: a CronJob whose pod is the release's (image, config, limits), made
# again with every release; job run starts one now and streams it.
step job add shop report --schedule "0 3 * * *" -- sh -c 'echo "report of $TUG_APP, release $TUG_RELEASE, GREETING=$GREETING"'
step job run shop report
step job list shop
# What the units use (the local cluster runs metrics-server) and what
# happened to the app, Kubernetes' Events merged with tug's records.
step unit top shop --once
printf '\n\033[1m$ tug app events shop --since 3m | tail -n 12\033[0m\n'
tug app events shop --since 3m | tail -n 12

rm -f "$ca"
cd - >/dev/null
rm -rf "$shop"

# A backing service: PostgreSQL from tug's built-in plan, the image named in
# the cluster settings (the local cluster's, as an admin of a cluster with no
# internet names theirs), bound to an app that writes a row on every request
# and answers with what it read (DATABASE_URL, and the servicebinding.io files).
service_images=$("$repo/test/cluster/cluster.sh" service-images)
postgres_image=$(awk '$1 == "postgres" {print $2}' <<<"$service_images")
dbapp_image=$(awk '$1 == "dbapp" {print $2}' <<<"$service_images")
step cluster settings set "services.postgres.image=$postgres_image"
step service plans
step service create db --plan postgres
step app create notes --description "answers from its database"
step app deploy notes --image "$dbapp_image"
step service bind notes db
step service info db
notes=$(tug app info notes -o 'jsonpath={.urls[0]}')
notes=${notes#*://}
notes=${notes%%/*}
show_routed "http://$notes/" "db ok rows="
show_routed "http://$notes/bindings" "db type=postgresql"

# A team around the app. A CI identity with the developer level: its
# kubeconfig holds a token from the TokenRequest API that expires in an hour
# (written 0600, never printed here); what it changes names it as the actor.
ci=$(mktemp)
step access token demo-ci --role developer --ttl 1h -f "$ci"
step access list
printf '
[1m$ KUBECONFIG=ci.kubeconfig tug env set notes GREETING=from-ci[0m
'
KUBECONFIG=$ci tug env set notes GREETING=from-ci
rm -f "$ci"
step release list notes
# A review app per pull request: its own copy of the app, with a database
# forked from notes' (a dump streamed in: the demo keeps no stored backup),
# at its own URL, removed by 'review down' or by any review command once its
# time is up.
step review up notes --name pr-1 --image "$dbapp_image" --fork-service db --ttl 2h
step review list notes
review=$(tug app info notes-pr-1 -o 'jsonpath={.urls[0]}')
review=${review#*://}
review=${review%%/*}
show_routed "http://$review/" "db ok rows="
# Build once, promote the digest: what would change if the review's image
# went to notes (config keys, process types, services; never values).
step app promote notes-pr-1 notes --dry-run
step review down notes --name pr-1 --yes

# Pools on every command: two kubeconfig contexts (here two namespaces of the
# one local cluster stand in for two clusters), each holding one pool. App
# commands find the app's cluster themselves; moving the app to a pool of
# the other cluster recreates it there, waits until it serves, and only then
# removes it here.
export TUG_CONFIG=/tmp/tug-demo-config.yaml
rm -f "$TUG_CONFIG"
"$k8s" kubectl delete namespace "$ns-east" --ignore-not-found --wait >/dev/null
"$k8s" kubectl create namespace "$ns-east" >/dev/null
current=$("$k8s" kubectl config current-context)
"$k8s" kubectl config set-context east --cluster "$("$k8s" kubectl config view --minify -o jsonpath='{.contexts[0].context.cluster}')" \
  --user "$("$k8s" kubectl config view --minify -o jsonpath='{.contexts[0].context.user}')" --namespace "$ns-east" >/dev/null
nodes=($("$k8s" kubectl get nodes -o name | sed 's|node/||'))
step cluster add west --context "$current" --pool west --default
step cluster add east --context east --pool east
step node update "${nodes[0]}" --pool west --cluster west
step node update "${nodes[$(( ${#nodes[@]} - 1 ))]}" --pool east --cluster east
step app pool set shop west
step app pool set shop east
step app info shop
step unit list shop
printf '\nThe cluster keeps running: export KUBECONFIG=%s TUG_CONFIG=%s (namespaces %s and %s-east); stop it with make cluster-down\n' "$KUBECONFIG" "$TUG_CONFIG" "$ns" "$ns"
