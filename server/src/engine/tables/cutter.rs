//! The object store the lab's tables are written through: the local file system, which aborts
//! the process just before a Delta commit file is written when a crash test asks for it.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use deltalake::logstore::object_store::{
    self, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, local::LocalFileSystem,
    path::Path as StorePath,
};
use futures::stream::BoxStream;

use crate::crash::{CrashPoint, Moment};

/// A local file system that aborts the process just before a Delta commit file is written,
/// when a crash test asks for it: the data files of the operation are on disk, the commit is not.
#[derive(Debug)]
pub(super) struct CommitCutter {
    pub(super) inner: Arc<LocalFileSystem>,
    pub(super) cut: Option<CrashPoint>,
}

impl CommitCutter {
    fn check(&self, location: &StorePath) {
        let path = location.as_ref();
        if path.contains("_delta_log/") && path.ends_with(".json") {
            CrashPoint::abort_if(
                self.cut.as_ref(),
                self.cut.as_ref().map_or("", |c| c.stream.as_str()),
                Moment::AfterWrite,
            );
        }
    }
}

impl fmt::Display for CommitCutter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CommitCutter({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CommitCutter {
    async fn put_opts(
        &self,
        location: &StorePath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.check(location);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &StorePath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &StorePath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<StorePath>>,
    ) -> BoxStream<'static, object_store::Result<StorePath>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&StorePath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&StorePath>,
    ) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &StorePath,
        to: &StorePath,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.check(to);
        self.inner.copy_opts(from, to, options).await
    }
}
