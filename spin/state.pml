/*
 * The state protocol of circulation (state.go and the loops of trigger.go
 * that call it), for the spin model checker. It is an independent check of
 * explore_test.go, which explores the same protocol by calling the real Go
 * transitions: here they are written again in Promela, so this model can
 * drift from the code and the Go explorer cannot. Keep them in step.
 *
 * The state word is three variables, changed together in one atomic CAS
 * step after a separate load step, as Trigger.state is. Fire on an idle
 * Trigger may coalesce into a pending timer armed with no delay whose
 * callback has not claimed it yet (shot.go's coalesce): the array due
 * stands for "the pending shot of this version is due". The version counts
 * modulo MOD (32) instead of 1<<30. The protocol compares versions only
 * for equality; the checks order them by their distance from the starting
 * version (OFF). A run uses fewer than 10, so START=30 makes them wrap as
 * the Go explorer's 0x3ffffffe does.
 *
 * init picks one of the situations of explore_configs_test.go and adds up
 * to OPS operations (Fire, FireAfter(d) and Suspend); spin explores every
 * choice and every interleaving. Checked in every state (monitor): at most
 * one goroutine holds the running bit, the running bit is set exactly when
 * one does, the reservation only with it. Checked when f starts: no version
 * runs twice, nothing starts for a version at or after a final Suspend's.
 * Checked when a run arms its next timer: it returned true and was not
 * superseded. Checked at the end: no fire was lost.
 *
 * Run (the "errors: 0" line is the verdict):
 *   spin -a state.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m10000
 *   spin -DSTART=30 -a state.pml && ...        (the versions wrap)
 *   spin -DMUTANT=1 -a state.pml && ...         (must find an error; 1..5)
 */

#ifndef START
#define START 0
#endif
#ifndef OPS
#define OPS 3
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NONE    0
#define FIRE    1
#define SUSPEND 2

#define IDLE     0 /* exitIdle */
#define AGAIN    1 /* exitAgain */
#define ARM      2 /* exitArm */
#define STALE    3 /* entryStale */
#define DEFERRED 4 /* entryDeferred */
#define RUN      5 /* entryRun */

#define MOD 32 /* the version counts modulo MOD */
#define INC(v) (((v) + 1) % MOD)
#define DEC(v) (((v) + MOD - 1) % MOD)
#define OFF(v) (((v) + MOD - base) % MOD) /* distance from base, across the wrap */

/* Trigger.state */
bit reserved, running;
byte ver;

/* bookkeeping for the checks */
byte owners;          /* goroutines holding the running bit */
bit sup;              /* the owner's iteration was superseded */
byte okLeft = 1;      /* how many more times f may return true */
byte panicLeft = 1;   /* how many more times f may panic */
byte last = NONE;     /* the latest Fire, FireAfter or Suspend */
byte lastV;           /* and the version it published */
bit served;           /* f started for lastV or later since */
bit ran;              /* f has started */
byte lastRun;         /* the version f last started for */
byte base;
bit due[MOD];         /* the timer of this version is armed with no delay and unclaimed */

#define LOAD atomic { lr = reserved; lu = running; lv = ver }
#define CURRENT (reserved == lr && running == lu && ver == lv)
#define PUBLISH atomic { reserved = nr; running = nu; ver = nv }
#define FORGET lr = 0; lu = 0; lv = 0; nr = 0; nu = 0; nv = 0 /* dead after the CAS */

/* published: a Fire, FireAfter or Suspend published version v. */
inline published(kind, v) {
	last = kind; lastV = v; served = 0;
	if
	:: owners > 0 -> sup = 1
	:: else -> skip
	fi
}


/* Fire is FireAfter(0): reserve while running; otherwise coalesce into a
 * due pending timer, or advance and arm one with no delay. */
proctype Fire() {
	bit lr, lu, nr, nu, ok;
	byte lv, nv;
	do
	:: LOAD;
	   if
	   :: lu -> nr = 1; nu = lu; nv = INC(lv)     /* reserve */
#if MUTANT == 2
	            nv = lv                             /* reserve does not advance */
#endif
	   :: !lu && due[lv] ->                       /* coalesce: the pending shot is due */
	      atomic {
		if
		:: CURRENT -> published(FIRE, lv); ok = 1 /* the state is still s */
		:: else -> ok = 0
		fi
	      };
	      if
	      :: !ok -> FORGET; goto retry
#if MUTANT == 5
	      :: ok -> FORGET; goto coalesced           /* coalesce does not look again */
#else
	      :: ok && due[lv] -> FORGET; goto coalesced /* still due */
	      :: ok && !due[lv] -> skip                 /* claimed meanwhile */
#endif
	      fi;
	      nr = 0; nu = lu; nv = INC(lv)
	   :: !lu -> nr = 0; nu = lu; nv = INC(lv)    /* advance (the shot may be out of the slot) */
	   fi;
	   atomic {
		if
		:: CURRENT -> PUBLISH; published(FIRE, nv); ok = 1;
		   if
		   :: !lu -> due[nv] = 1; run Timer(nv)
		   :: else -> skip
		   fi
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi;
retry:
	   skip
	od;
coalesced:
	skip
}

/* FireAfter(d) with d > 0: advance and arm. */
proctype FireAfter() {
	bit lr, lu, nr, nu, ok;
	byte lv, nv;
	do
	:: LOAD;
	   nr = 0; nu = lu; nv = INC(lv);
#if MUTANT == 1
	   nr = lr;                                     /* advance keeps the reservation */
#endif
	   atomic {
		if
		:: CURRENT -> PUBLISH; published(FIRE, nv); run Timer(nv); ok = 1
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od
}

proctype Suspend() {
	bit lr, lu, nr, nu, ok;
	byte lv, nv;
	do
	:: LOAD;
	   nr = 0; nu = lu; nv = INC(lv);
#if MUTANT == 1
	   nr = lr;
#endif
	   atomic {
		if
		:: CURRENT -> PUBLISH; published(SUSPEND, nv); ok = 1
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od
}

/* Timer is a timer callback for version v: shot.run's claim, then
 * Trigger.start. */
proctype Timer(byte v) {
	bit lr, lu, nr, nu, ok;
	byte lv, nv, x;
	due[v] = 0; /* claim */
	do
	:: LOAD;
	   if
	   :: lv != v -> break                          /* stale */
	   :: lv == v && lu -> nr = 1; nu = 1; x = DEFERRED
#if MUTANT == 3
	                       nr = lr                  /* enter defers without reserving */
#endif
	   :: lv == v && !lu -> nr = lr; nu = 1; x = RUN
	   fi;
	   atomic {
		if
		:: CURRENT -> reserved = nr; running = nu; ok = 1;
		   if
		   :: x == RUN -> owners++; sup = 0; run Loop(v, 0)
		   :: else -> skip
		   fi
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od
}

/* Loop is Trigger.loop: the goroutine holding the running bit, about to
 * call f for v, or inside it already. */
proctype Loop(byte v; bit inside) {
	bit lr, lu, nr, nu, ok, fok, fnow;
	byte lv, nv, x;
	if
	:: inside -> goto infunc
	:: else -> skip
	fi;
begin:
	atomic {
		assert(!(ran && OFF(v) <= OFF(lastRun)));          /* no version runs twice */
		assert(!(last == SUSPEND && OFF(v) >= OFF(lastV))); /* Suspend wins */
		if
		:: last == FIRE && OFF(v) >= OFF(lastV) -> served = 1
		:: else -> skip
		fi;
		ran = 1; lastRun = v
	};
infunc:
	if
	:: fok = 0
	:: atomic { okLeft > 0 -> okLeft--; fok = 1; fnow = 1 } /* (0, true) */
	:: atomic { okLeft > 0 -> okLeft--; fok = 1 }           /* (d, true) */
	:: atomic { panicLeft > 0 -> panicLeft-- }; goto abort
	fi;
	do                                                    /* finish */
	:: LOAD;
	   if
	   :: lr -> nr = 0; nu = lu; nv = lv; x = AGAIN
#if MUTANT == 4
	            nu = 0                                      /* finish clears running first */
#endif
	   :: !lr && fok && lv == v -> nr = 0; nu = 0; nv = INC(lv); x = ARM
	   :: !lr && !(fok && lv == v) -> nr = 0; nu = 0; nv = lv; x = IDLE
	   fi;
	   atomic {
		if
		:: CURRENT -> PUBLISH; ok = 1;
		   if
		   :: x == AGAIN -> sup = 0; v = nv; fok = 0; fnow = 0
		   :: x == ARM -> assert(fok && !sup); owners--; due[nv] = fnow; run Timer(nv)
		   :: x == IDLE -> owners--
		   fi
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od;
	if
	:: x == AGAIN -> goto begin
	:: else -> goto done
	fi;
abort:
	do
	:: LOAD;
	   if
	   :: lr -> nr = 0; nu = 0; nv = INC(lv); x = ARM
	   :: else -> nr = 0; nu = 0; nv = lv; x = IDLE
	   fi;
	   atomic {
		if
		:: CURRENT -> PUBLISH; owners--; ok = 1;
		   if
		   :: x == ARM -> due[nv] = 1; run Timer(nv)
		   :: else -> skip
		   fi
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od;
done:
	skip
}

/* The invariants on the state word, in every reachable state. */
active proctype monitor() {
end:
	atomic {
		!(owners <= 1 && running == (owners > 0) && (!reserved || running)) -> assert(false)
	}
}

init {
	byte i;
	atomic {
		ver = START;
		base = (START + MOD - 2) % MOD;
		if
		:: skip                                               /* idle */
		:: last = FIRE; lastV = ver; run Timer(ver)           /* timer pending */
		:: last = FIRE; lastV = ver; due[ver] = 1; run Timer(ver) /* no-delay timer pending */
		:: last = SUSPEND; lastV = ver; run Timer(DEC(ver))   /* stale timer */
		:: last = FIRE; lastV = ver; run Timer(DEC(ver)); run Timer(ver)
		:: running = 1; owners = 1; ran = 1; lastRun = ver;  /* running */
		   last = FIRE; lastV = ver; served = 1; run Loop(ver, 1)
		:: running = 1; owners = 1; ran = 1; lastRun = ver;  /* running, stale timer */
		   last = FIRE; lastV = ver; served = 1; run Loop(ver, 1); run Timer(DEC(ver))
		:: running = 1; reserved = 1; owners = 1; sup = 1;   /* running, fired */
		   ran = 1; lastRun = DEC(ver); last = FIRE; lastV = ver; run Loop(DEC(ver), 1)
		:: running = 1; owners = 1; sup = 1;                 /* running, fired after */
		   ran = 1; lastRun = DEC(ver); last = FIRE; lastV = ver; run Loop(DEC(ver), 1); run Timer(ver)
		:: running = 1; owners = 1; sup = 1;                 /* running, suspended */
		   ran = 1; lastRun = DEC(ver); last = SUSPEND; lastV = ver; run Loop(DEC(ver), 1)
		fi;
		i = 0;
		do
		:: i < OPS -> run Fire(); i++
		:: i < OPS -> run FireAfter(); i++
		:: i < OPS -> run Suspend(); i++
		:: break
		od
	};
	_nr_pr == 2;                                          /* everyone else has finished */
	assert(last != FIRE || served)                        /* no lost fire */
}
