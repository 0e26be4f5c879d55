//! How a native call runs, and the panic boundary around every part of it.
//!
//! - [`guard`]: the JS-thread part of a call (reading its arguments),
//! - [`Op`]: the core's work on libuv's thread pool (`AsyncTask`), and its
//!   answer converted back on the JS thread,
//! - [`on_thread`]: work that may wait (a lease wait) on a thread of its
//!   own, so waiting pollers never occupy the pool that completes and
//!   heartbeats need,
//! - [`Guarded`]: the conversion of an answer into JS values.
//!
//! A panic in any of them (a bug in the core or here) must not unwind into
//! napi's `extern "C"` callbacks, which would abort the process: each one
//! is caught and becomes the typed storage error (code `STORAGE`), as the
//! C boundary turns one into `TJ_STATUS_PANIC`.

use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};

use napi::bindgen_prelude::{AsyncTask, Env, Object, Status, ToNapiValue, TypeName};
use napi::{sys, Task, ValueType};

use crate::errors::{to_js, Failure};

/// Run the JS-thread part of the native call `call`: a failure or a panic
/// becomes a coded JS error.
pub fn guard<T>(
    env: &Env,
    call: &'static str,
    body: impl FnOnce() -> Result<T, Failure>,
) -> napi::Result<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(f)) => Err(to_js(env, f)),
        Err(p) => Err(to_js(env, Failure::panicked(call, p))),
    }
}

type Work<T> = Box<dyn FnOnce() -> Result<T, Failure> + Send>;

/// One call into the core on libuv's thread pool: `work` runs there, `done`
/// converts its answer on the JS thread; a failure becomes a coded JS error.
pub struct Op<T: Send + 'static, J> {
    call: &'static str,
    work: Option<Work<T>>,
    done: fn(T) -> J,
    failure: Option<Failure>,
    _js: PhantomData<fn() -> J>,
}

impl<T: Send + 'static, J> Op<T, J> {
    /// The native call `call`: `work`, then `done` on the JS thread.
    pub(crate) fn new(
        call: &'static str,
        work: impl FnOnce() -> Result<T, Failure> + Send + 'static,
        done: fn(T) -> J,
    ) -> Self {
        Op {
            call,
            work: Some(Box::new(work)),
            done,
            failure: None,
            _js: PhantomData,
        }
    }

    /// The task of the native call `call` (on libuv's pool).
    pub(crate) fn task(
        call: &'static str,
        work: impl FnOnce() -> Result<T, Failure> + Send + 'static,
        done: fn(T) -> J,
    ) -> AsyncTask<Self>
    where
        J: ToNapiValue + TypeName,
    {
        AsyncTask::new(Self::new(call, work, done))
    }
}

impl<T: Send + 'static, J: ToNapiValue + TypeName> Op<T, J> {
    /// Run the call here, on the JS thread, inside the same panic
    /// boundaries as on the pool (`now.rs` decides when that is safe): its
    /// answer, or the coded JS error the pool would have rejected with.
    pub(crate) fn now(mut self, env: &Env) -> napi::Result<Guarded<J>> {
        match self.compute() {
            Ok(t) => self.resolve(*env, t),
            Err(e) => self.reject(*env, e),
        }
    }
}

impl<T: Send + 'static, J: ToNapiValue + TypeName> Task for Op<T, J> {
    type Output = T;
    type JsValue = Guarded<J>;

    fn compute(&mut self) -> napi::Result<T> {
        let work = self
            .work
            .take()
            .ok_or_else(|| napi::Error::new(Status::GenericFailure, "task ran twice"))?;
        // A panic in the core must not unwind into libuv.
        let f = match catch_unwind(AssertUnwindSafe(work)) {
            Ok(Ok(t)) => return Ok(t),
            Ok(Err(f)) => f,
            Err(p) => Failure::panicked(self.call, p),
        };
        self.failure = Some(f);
        Err(napi::Error::new(Status::GenericFailure, "failed"))
    }

    fn resolve(&mut self, env: Env, output: T) -> napi::Result<Guarded<J>> {
        let done = self.done;
        match catch_unwind(AssertUnwindSafe(|| done(output))) {
            Ok(j) => Ok(Guarded(self.call, j)),
            Err(p) => Err(to_js(&env, Failure::panicked(self.call, p))),
        }
    }

    fn reject(&mut self, env: Env, err: napi::Error) -> napi::Result<Guarded<J>> {
        match self.failure.take() {
            Some(f) => Err(to_js(&env, f)),
            None => Err(err),
        }
    }
}

/// An answer whose conversion into JS values runs inside a panic boundary
/// (`call` names the native call in the message).
pub struct Guarded<J>(pub &'static str, pub J);

impl<J: TypeName> TypeName for Guarded<J> {
    fn type_name() -> &'static str {
        J::type_name()
    }
    fn value_type() -> ValueType {
        J::value_type()
    }
}

impl<J: ToNapiValue> ToNapiValue for Guarded<J> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let Guarded(call, j) = val;
        // SAFETY: napi calls this on the JS thread with its live env.
        match catch_unwind(AssertUnwindSafe(|| unsafe { J::to_napi_value(env, j) })) {
            Ok(r) => r,
            Err(p) => Err(to_js(&Env::from_raw(env), Failure::panicked(call, p))),
        }
    }
}

/// Run `work` on a thread of its own (named `thread`) and resolve the
/// returned Promise with its answer, converted on the JS thread.
pub fn on_thread<'env, T, J>(
    env: &'env Env,
    call: &'static str,
    thread: &str,
    work: impl FnOnce() -> Result<T, Failure> + Send + 'static,
    done: fn(T) -> J,
) -> napi::Result<Object<'env>>
where
    T: Send + 'static,
    J: ToNapiValue + 'static,
{
    type Resolve<J> = Box<dyn FnOnce(Env) -> napi::Result<Guarded<J>> + Send>;
    let (deferred, promise) = env.create_deferred::<Guarded<J>, Resolve<J>>()?;
    std::thread::Builder::new()
        .name(thread.into())
        .spawn(move || {
            let r = match catch_unwind(AssertUnwindSafe(work)) {
                Ok(r) => r,
                Err(p) => Err(Failure::panicked(call, p)),
            };
            deferred.resolve(Box::new(move |env: Env| {
                let t = r.map_err(|f| to_js(&env, f))?;
                match catch_unwind(AssertUnwindSafe(|| done(t))) {
                    Ok(j) => Ok(Guarded(call, j)),
                    Err(p) => Err(to_js(&env, Failure::panicked(call, p))),
                }
            }));
        })
        .map_err(|e| {
            to_js(
                env,
                Failure::Core(telha_jobs::Error::Storage(format!(
                    "cannot start a {thread} thread: {e}"
                ))),
            )
        })?;
    Ok(promise)
}

/// For [`crate::panic_for_test`]: a panic in each boundary above in turn.
pub mod testing {
    use super::*;

    /// A value whose conversion into JS panics when it holds true (else
    /// it is `undefined`).
    pub struct PanicsWhenConverted(pub bool);

    impl TypeName for PanicsWhenConverted {
        fn type_name() -> &'static str {
            "undefined"
        }
        fn value_type() -> ValueType {
            ValueType::Undefined
        }
    }

    impl ToNapiValue for PanicsWhenConverted {
        unsafe fn to_napi_value(env: sys::napi_env, v: Self) -> napi::Result<sys::napi_value> {
            if v.0 {
                panic!("a test panic while converting an answer");
            }
            unsafe { <()>::to_napi_value(env, ()) }
        }
    }
}
