# no SIGSTOP: instance1 (pool-size 1) is overloaded while its execution sleeps before the ledger write
import sys, time, threading, os, requests, subprocess
sys.path.insert(0,'/tmp/atk'); sys.path.insert(0,'/tmp/rt')
from srv import *; from c import *
name=sys.argv[1]; db=pgdb(name)
common=["--lease-secs","1","--processor-latency-ms","500","--slow-processor-ms","0"]
p1,u1=start(db,*common,"--reaper-interval-secs","0","--pool-size","1","--pool-timeout-ms","10000",name=name+"_1")
p2,u2=start(db,*common,"--reaper-interval-secs","1",name=name+"_2")
oid=order(u2,1000); K=k(); res={}
body={"order_id":oid,"payment_method":"pm_card_flaky"}
def A(): r=post(u1,"/payments",body,K); res['A']=r.status_code
t=threading.Thread(target=A); t.start()
q="select recovery_point from idempotency_records where idempotency_key='%s'"%K
for _ in range(200):
    if subprocess.run(["psql","-h","127.0.0.1","-U","postgres",name,"-Atc",q],capture_output=True,text=True).stdout.strip().endswith("_created"): break
stopf=threading.Event()
def flood():
    s=requests.Session()
    while not stopf.is_set():
        try: s.post(u1+"/orders",json={"amount":5,"currency":"EUR"},headers=H(k()),timeout=20)
        except Exception: pass
fl=[threading.Thread(target=flood,daemon=True) for _ in range(60)]; [f.start() for f in fl]
time.sleep(1.3)
r=post(u2,"/payments",body,K); print("retry on instance2:",r.status_code,r.json().get("code"))
r=pay(u2,oid,"pm_card_visa"); print("new payment:",r.status_code,r.json().get("status"))
time.sleep(1.5); stopf.set(); t.join(30)
print("A:",res)
print(subprocess.run(["psql","-h","127.0.0.1","-U","postgres",name,"-Atc","select processor_key,status,calls from simulator_operations"],capture_output=True,text=True).stdout)
p1.kill(); p2.kill(); p1.wait(); p2.wait(); print("CHECK",check(name))
