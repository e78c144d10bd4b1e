# Scenarios of tests/net/cluster_test.sh, which sources this file:
# TLS, the admission token and hostile peers on the published ports.
# Each uses the globals and helpers the entry point defines.
# shellcheck shell=bash

scenario_tls() {
  bash "$HERE/make_certs.sh" certs >/dev/null 2>&1 || fail "make_certs failed"
  TLS=(--tls-cert=certs/node.pem --tls-key=certs/node.key --tls-ca=certs/ca.pem)
  start_coordinator coord --algo=downpour --workers=1 "${JOB[@]}" \
    --target-accuracy=0.78 --epochs=5 --listen=127.0.0.1:0 --expect=1 "${TLS[@]}"
  # A node with a certificate from another CA, and one without TLS: refused.
  # Each says why within seconds, well before its 60 s join timeout.
  start_node wrong --tls-cert=certs/wrong.pem --tls-key=certs/wrong.key \
    --tls-ca=certs/wrong-ca.pem --join-timeout=60; W=$NODE
  start_node plain --join-timeout=60; P=$NODE
  wait_for "$W" 15; s=$?
  [ "$s" = 1 ] || fail "wrong-CA node exited with $s, expected 1 within 15 s"
  grep -q "refused the TLS certificate.*wrong-ca.pem" wrong.log \
    || fail "wrong-CA node does not say why"
  wait_for "$P" 15; s=$?
  [ "$s" = 1 ] || fail "plaintext node exited with $s, expected 1 within 15 s"
  grep -q "speaks TLS: start this node with --tls-cert" plain.log \
    || fail "plaintext node does not say why"
  # A node whose certificate is from another CA (it trusts both CAs).
  cat certs/ca.pem certs/wrong-ca.pem >certs/both-ca.pem
  start_node foreign --tls-cert=certs/wrong.pem --tls-key=certs/wrong.key \
    --tls-ca=certs/both-ca.pem --join-timeout=60; F=$NODE
  wait_for "$F" 15; s=$?
  [ "$s" = 1 ] || fail "foreign node exited with $s, expected 1 within 15 s"
  grep -q "refused our TLS handshake" foreign.log \
    || fail "foreign node does not say why"
  # The coordinator (its guard terminates TLS) logged each of the three.
  wait_log coord.log "refused the TLS handshake of 127.0.0.1:[0-9]*: its certificate does not verify against the CA file '[^']*ca.pem'" 5 \
    || fail "the coordinator did not log the foreign certificate"
  grep -q "TLS handshake of 127.0.0.1:[0-9]* failed: it aborted the handshake with the alert 'unknown CA'" coord.log \
    || fail "the coordinator did not log the node that refused its certificate"
  grep -q "TLS handshake of 127.0.0.1:[0-9]* failed: it closed the connection during the TLS handshake, without sending a certificate" coord.log \
    || fail "the coordinator did not log the plaintext node"
  start_node good "${TLS[@]}"; G=$NODE
  check_done coord
  wait_for "$G" 30 || fail "TLS node exited with status $?"
  [ "$(key coord.json /guard/admitted)" = 1 ] || fail "TLS job not guarded"
  [ "$(key coord.json /guard/tls_failed)" -ge 3 ] \
    || fail "failed TLS handshakes not counted: $(key coord.json /guard)"
  # A TLS node facing a plaintext (guarded) coordinator says so at once.
  start_coordinator plaincoord --algo=downpour --workers=1 "${JOB[@]}" \
    --epochs=1 --listen=127.0.0.1:0 --expect=1 --join-timeout=60
  start_node tlsnode "${TLS[@]}" --join-timeout=60; T=$NODE
  wait_for "$T" 15; s=$?
  [ "$s" = 1 ] || fail "TLS node vs plaintext exited with $s, expected 1"
  grep -q "this node speaks TLS but the coordinator" tlsnode.log \
    || fail "TLS node vs plaintext does not say why"
  kill -9 "$COORD" 2>/dev/null
  # An unusable certificate stops the process instead of falling back.
  "$TROUPE" node --join=127.0.0.1:1 --tls-cert=certs/garbage.pem \
    --tls-key=certs/node.key --tls-ca=certs/ca.pem 2>bad.log
  s=$?
  [ "$s" = 2 ] || fail "garbage certificate: status $s, expected 2"
  grep -q "garbage.pem" bad.log || fail "garbage certificate not named"
}

scenario_tlsguard() {
  # The guard terminates TLS: a plaintext BASP client, a TLS client without
  # a certificate and three with a valid one that announce a 1 GiB client
  # handshake and stay silent (CAF's TLS port allocated 1 GiB for each) are
  # cut off and logged, the coordinator's memory stays put, and two TLS
  # nodes join and complete the job.
  bash "$HERE/make_certs.sh" certs >/dev/null 2>&1 || fail "make_certs failed"
  TLS=(--tls-cert=certs/node.pem --tls-key=certs/node.key --tls-ca=certs/ca.pem)
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --epochs=6 \
    --target-accuracy=0.78 --listen=127.0.0.1:0 --expect=2 "${TLS[@]}"
  TPID=$(pgrep -P "$COORD" | head -1)
  mem() { awk -v k="$1:" '$1 == k { print $2 }' /proc/"$TPID"/status; }
  before=$(mem VmRSS)
  timeout 60 "$HOSTILE" --mode=oversized --payload-len=1073741824 \
    --host=127.0.0.1 --port="$PORT" --seconds=6 --connections=2 \
    2>>hostile.log &
  PIDS+=($!)
  sleep 1.5 # the log's rate limit: 5 lines a second
  # A client handshake header announcing 1 GiB (BASP 0.17), then silence.
  header='\x01\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03'
  header+='\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
  for i in 1 2 3; do
    { printf "$header"; sleep 8; } | timeout 20 openssl s_client -quiet \
      -connect 127.0.0.1:"$PORT" -cert certs/node.pem -key certs/node.key \
      -CAfile certs/ca.pem >/dev/null 2>>sclient.log &
    PIDS+=($!)
  done
  sleep 1.5
  { sleep 8; } | timeout 20 openssl s_client -quiet \
    -connect 127.0.0.1:"$PORT" -CAfile certs/ca.pem >/dev/null 2>>sclient.log &
  PIDS+=($!)
  sleep 2
  start_node n1 "${TLS[@]}"; N1=$NODE
  start_node n2 "${TLS[@]}"; N2=$NODE
  wait_log coord.log "hosts 1 worker" 60 || fail "nodes did not join"
  peak=$(mem VmHWM)
  echo "coordinator memory: ${before} kB before the attack, peak ${peak} kB" >&2
  [ $((peak - before)) -lt 262144 ] \
    || fail "the coordinator grew by $(((peak - before) / 1024)) MB"
  check_done coord
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "node 2 exited with status $?"
  echo "guard: $(key coord.json /guard)" >&2
  n=$(grep -c "cut off 127.0.0.1:[0-9]*: client handshake payload of 1073741824 bytes exceeds" coord.log)
  [ "$n" = 3 ] || fail "$n of 3 oversized TLS handshakes logged"
  grep -q "refused the TLS handshake of 127.0.0.1:[0-9]*: it speaks plaintext BASP, not TLS" coord.log \
    || fail "the plaintext BASP client was not named"
  grep -q "refused the TLS handshake of 127.0.0.1:[0-9]*: the peer sent no certificate" coord.log \
    || fail "the client without a certificate was not named"
  [ "$(key coord.json /guard/refused)" -ge 6 ] || fail "refusals not counted"
}

scenario_token() {
  printf 's3cret-token\n' >token
  start_coordinator coord --algo=downpour --workers=1 "${JOB[@]}" \
    --target-accuracy=0.78 --epochs=5 --listen=127.0.0.1:0 --expect=1 \
    --token-file=token
  start_node wrong --token=guess; W=$NODE
  start_node none; X=$NODE
  wait_for "$W" 60; s=$?
  [ "$s" = 1 ] || fail "wrong-token node exited with $s, expected 1"
  grep -q "wrong join token" wrong.log || fail "no reason for the refusal"
  wait_for "$X" 60; s=$?
  [ "$s" = 1 ] || fail "token-less node exited with $s, expected 1"
  start_node good --token-file=token; G=$NODE
  check_done coord
  wait_for "$G" 30 || fail "node with the token exited with status $?"
}

scenario_hostile() {
  # Garbage at the coordinator's port before and during the job.
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --epochs=6 \
    --target-accuracy=0.78 --listen=127.0.0.1:0 --expect=2
  for mode in random truncated oversized silent; do
    timeout 60 "$HOSTILE" --mode=$mode --host=127.0.0.1 --port="$PORT" \
      --seconds=2 --connections=8 --seed="$SEED" 2>>hostile.log &
    PIDS+=($!)
  done
  start_node n1; N1=$NODE
  start_node n2; N2=$NODE
  wait_log coord.log "hosts 1 worker" 60 || fail "nodes did not join"
  for mode in random truncated oversized silent; do
    timeout 60 "$HOSTILE" --mode=$mode --host=127.0.0.1 --port="$PORT" \
      --seconds=2 --connections=8 --seed="$SEED" 2>>hostile.log || true
  done
  check_done coord
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "node 2 exited with status $?"
  # The oversized headers (8 connections, twice) were cut off at the guard.
  refused=$(key coord.json /guard/refused)
  echo "guard: $(key coord.json /guard)" >&2
  [ "${refused:-0}" -ge 16 ] || fail "guard refused ${refused:-0} < 16"
}

scenario_guardmem() {
  # Three connections each announce a 1 GiB client handshake and stay silent
  # (CAF 0.17.6 allocates a frame's announced length when it reads the
  # header: this took a coordinator from 0.23 to 2.1 GB). The guard caps the
  # handshake and forwards no header before its payload: the coordinator's
  # peak memory stays put, and two nodes join and complete the job.
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --epochs=6 \
    --target-accuracy=0.78 --listen=127.0.0.1:0 --expect=2
  TPID=$(pgrep -P "$COORD" | head -1)
  mem() { awk -v k="$1:" '$1 == k { print $2 }' /proc/"$TPID"/status; }
  before=$(mem VmRSS)
  timeout 60 "$HOSTILE" --mode=oversized --payload-len=1073741824 \
    --host=127.0.0.1 --port="$PORT" --seconds=6 --connections=3 \
    2>>hostile.log &
  PIDS+=($!)
  sleep 4
  start_node n1; N1=$NODE
  start_node n2; N2=$NODE
  wait_log coord.log "hosts 1 worker" 60 || fail "nodes did not join"
  peak=$(mem VmHWM)
  echo "coordinator memory: ${before} kB before the attack, peak ${peak} kB" >&2
  [ $((peak - before)) -lt 262144 ] \
    || fail "the coordinator grew by $(((peak - before) / 1024)) MB"
  check_done coord
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "node 2 exited with status $?"
  grep -q "client handshake payload of 1073741824 bytes exceeds" coord.log \
    || fail "the guard did not name the oversized handshake"
}

scenario_loris() {
  # Slow-loris from another address (127.0.0.2): 64 connections send a
  # handshake one byte every 8 s. They filled every pending slot and no node
  # could join; now 16 (the per-address limit) are let in and cut 10 s after
  # accept, the rest refused at once, the refusals logged at a limited rate,
  # and a node (from 127.0.0.1) joins meanwhile; the second joins after the
  # cut, so the job outlives the deadline.
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --epochs=6 \
    --target-accuracy=0.78 --listen=127.0.0.1:0 --expect=2
  timeout 90 "$HOSTILE" --mode=slowloris --bind=127.0.0.2 --host=127.0.0.1 \
    --port="$PORT" --connections=64 --interval=8 --seconds=30 2>loris.log &
  LORIS=$!
  PIDS+=($LORIS)
  sleep 2
  start_node n1; N1=$NODE
  wait_log n1.log "joined the job" 20 \
    || fail "a node could not join while a slow-loris peer held connections"
  wait_log coord.log "no complete handshake within 10 s" 20 \
    || fail "handshake deadline not logged"
  start_node n2; N2=$NODE
  check_done coord
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "node 2 exited with status $?"
  wait_for "$LORIS" 60 || fail "the slow-loris peer did not finish"
  cat loris.log >&2
  grep -q "server closed 64 of 64" loris.log \
    || fail "the guard kept slow-loris connections open"
  grep -q "per-address limit" coord.log || fail "per-address refusals not logged"
  lines=$(grep -c "guard:" coord.log)
  [ "$lines" -le 20 ] || fail "$lines guard lines: the log is not rate-limited"
  grep -q "suppressed" coord.log || fail "suppressed refusals not counted"
}
