# The build step of tug/builder-static (docs/builders.md): it runs in /app
# and writes the site into public/.
set -e
mkdir -p public
{
  echo "<!doctype html><title>static-site</title>"
  echo "<h1>$(cat message.txt)</h1>"
} > public/index.html
echo "wrote public/index.html"
