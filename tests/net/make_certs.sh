#!/usr/bin/env bash
# make_certs.sh DIR: writes a throwaway PKI for the TLS tests into DIR.
#   ca.pem, ca.key          test CA (EC prime256v1)
#   node.pem, node.key      CN=troupe-node, SAN 127.0.0.1 + localhost, signed by ca
#   wrong-ca.pem, wrong-ca.key  an unrelated CA
#   wrong.pem, wrong.key    a node certificate signed by wrong-ca
#   node-enc.key            node.key encrypted with passphrase "troupe"
#   expired.pem, expired.key  signed by ca, validity ended in the past (best effort)
#   garbage.pem             not PEM at all
# Uses only the openssl command line tool. Validity: 2 days.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$1
mkdir -p "$dir"
cd "$dir"

# Deterministic extensions, independent of the system's openssl.cnf.
cat >ext.cnf <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[node_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyAgreement
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF

ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)

# make_ca NAME CN
make_ca() {
  openssl req -x509 "${ec[@]}" -config ext.cnf -extensions ca_ext \
    -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" 2>/dev/null
}

# make_node NAME CA DAYS
make_node() {
  openssl req -new "${ec[@]}" -config ext.cnf -keyout "$1.key" \
    -out "$1.csr" -subj "/CN=troupe-node" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days "$3" \
    -extfile ext.cnf -extensions node_ext -out "$1.pem" 2>/dev/null
  rm -f "$1.csr"
}

make_ca ca troupe-test-ca
make_node node ca 2
make_ca wrong-ca troupe-wrong-ca
make_node wrong wrong-ca 2

openssl pkey -in node.key -aes256 -passout pass:troupe -out node-enc.key

# An already expired certificate: a negative validity ends it a day ago.
# Optional: older or newer openssl versions may refuse it.
if ! make_node expired ca -1 2>/dev/null; then
  rm -f expired.pem expired.key expired.csr
  echo "make_certs.sh: no expired certificate (openssl refused -days -1)" >&2
fi

head -c 512 /dev/urandom | base64 >garbage.pem
chmod 600 ./*.key
rm -f ext.cnf
