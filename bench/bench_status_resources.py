#!/usr/bin/env python3
# status and status --resources at SERVICES services (default 1,000): pkitctl wall median
# and pkitd CPU per request (utime+stime delta over 20 requests, clock-tick resolution);
# then how long a `ping` waits while another client asks `status --resources` in a
# loop (the pass over /proc runs off the loop: pings are answered meanwhile). Prints
# figures only; never fails on timing. Usage: [SERVICES=N] bench_status_resources.py
# (PKITD/PKITCTL from the environment, default ./build).
import os, socket, subprocess, threading, time, tempfile, statistics, sys
PKITD=os.environ.get("PKITD", "build/daemon/pkitd"); CTL=os.environ.get("PKITCTL", "build/ctl/pkitctl")
d=tempfile.mkdtemp(prefix="statres-"); os.makedirs(d+"/services")
N=int(os.environ.get("SERVICES", "1000"))
for i in range(N):
    open(f"{d}/services/s{i:04d}.toml","w").write('command = ["sleep", "1000"]\n')
sock=d+"/s.sock"
p=subprocess.Popen([PKITD,"--config",d,"--socket",sock],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
def cpu():
    f=open(f"/proc/{p.pid}/stat").read().rsplit(")",1)[1].split()
    return (int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK")
deadline=time.time()+60
while time.time()<deadline:
    r=subprocess.run([CTL,"--socket",sock,"status"],capture_output=True,text=True)
    if r.returncode==0 and r.stdout.count(" running ")>=N-N//100: break
    time.sleep(0.5)
for args,label in (([],"status"),(["--resources"],"status --resources")):
    walls=[]; c0=cpu(); n=20
    for _ in range(n):
        t=time.monotonic(); subprocess.run([CTL,"--socket",sock,"status"]+args,stdout=subprocess.DEVNULL); walls.append((time.monotonic()-t)*1000)
    print(f"{label}: pkitctl wall median {statistics.median(walls):.1f} ms, pkitd CPU per request {(cpu()-c0)/n*1000:.1f} ms (clock-tick resolution, {n} requests)")
def connect():
    c=socket.socket(socket.AF_UNIX); c.connect(sock); return c, c.makefile("rb")
stop=threading.Event(); asked=[0]
def resources_loop():
    c,f=connect()
    while not stop.is_set():
        c.sendall(b'{"id":1,"cmd":"status","resources":true}\n'); f.readline(); asked[0]+=1
threading.Thread(target=resources_loop,daemon=True).start()
c,f=connect(); waits=[]; end=time.monotonic()+10; c0=cpu()
while time.monotonic()<end:
    t=time.monotonic(); c.sendall(b'{"id":2,"cmd":"ping"}\n'); f.readline(); waits.append((time.monotonic()-t)*1000)
    time.sleep(0.02)
stop.set(); used=cpu()-c0; answered=asked[0]; waits.sort()
print(f"ping while status --resources loops: p50 {waits[len(waits)//2]:.1f} / p99 {waits[int(len(waits)*0.99)]:.1f} / max {waits[-1]:.1f} ms ({len(waits)} pings; {answered} status --resources answered in 10 s, pkitd CPU {used/max(answered,1)*1000:.2f} ms each)")
subprocess.run([CTL,"--socket",sock,"shutdown"],stdout=subprocess.DEVNULL); p.wait()
import shutil
shutil.rmtree(d, ignore_errors=True)
