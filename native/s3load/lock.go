package main

// S3 Object Lock: the headers a locked PUT carries, the immutability check, and removing a
// run's objects from a versioned (locked) bucket.
//
// A lock protects a version, not a key: a plain DELETE on a versioned bucket only adds a
// delete marker, and an overwrite adds a version. So the check deletes *the version* (must be
// refused), then overwrites the key and deletes the original version again (must still be
// refused, the version still readable). Cleanup deletes every version and delete marker under
// the prefix, bypassing governance; versions under compliance retention cannot be removed by
// anyone before their retain-until date, so they are reported, not counted as failures.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"time"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// lockHeader: the object lock headers for a PUT (or CreateMultipartUpload) made now.
func lockHeader(cfg *Config, header http.Header) http.Header {
	if cfg.LockMode == "" {
		return header
	}
	until := time.Now().Add(time.Duration(cfg.RetentionS * float64(time.Second))).UTC()
	header.Set("X-Amz-Object-Lock-Mode", cfg.LockMode)
	header.Set("X-Amz-Object-Lock-Retain-Until-Date", until.Format("2006-01-02T15:04:05.000Z"))
	return header
}

// needsChecksum: AWS's PutObject and UploadPart documentation: "The Content-MD5 or
// x-amz-sdk-checksum-algorithm header is required for any request to upload an object with a
// retention period configured using Amazon S3 Object Lock", and with x-amz-sdk-checksum-algorithm
// "there must be a corresponding x-amz-checksum-<algorithm> or x-amz-trailer header". Strict
// servers (AWS, moto) refuse a locked PUT without them (MissingUploadObjectWithObjectLockHeaders,
// InvalidRequest); MinIO does not ask. CRC32C costs a fraction of MD5's CPU. The body is
// generated twice (once for the checksum, once on the wire) rather than held: 100 streams of
// 64 MiB parts do not fit in memory.
func needsChecksum(cfg *Config) bool { return cfg.Checksum || cfg.LockMode != "" }

// setChecksum: the two headers an SDK sends with a CRC32C checksum of the body.
func setChecksum(header http.Header, sum string) {
	header.Set("X-Amz-Sdk-Checksum-Algorithm", "CRC32C")
	header.Set("X-Amz-Checksum-Crc32c", sum)
}

// putHeader: the headers of a single-request PUT of object key: its lock, and the checksum
// the lock requires.
func putHeader(cfg *Config, content *Content, key int64, shape Shape, stamp uint64, buf []byte) http.Header {
	header := lockHeader(cfg, http.Header{})
	if needsChecksum(cfg) {
		setChecksum(header, crc32cOf(content.Body(key, shape, 0, shape.Size, stamp), buf))
	}
	return header
}

func crc32cOf(body io.Reader, buf []byte) string {
	crc := crc32.New(castagnoli)
	io.CopyBuffer(crc, body, buf)
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	return base64.StdEncoding.EncodeToString(sum[:])
}

// LockEnabled: does the bucket have object lock enabled?
func (c *Client) LockEnabled(ctx context.Context) (bool, error) {
	_, body, err := c.Simple(ctx, http.MethodGet, "", map[string]string{"object-lock": ""}, nil, nil)
	if err != nil {
		if opErr, ok := err.(*OpError); ok && (opErr.Kind == "ObjectLockConfigurationNotFoundError" || opErr.Status == 404) {
			return false, nil
		}
		return false, err
	}
	return strings.Contains(string(body), "<ObjectLockEnabled>Enabled</ObjectLockEnabled>"), nil
}

type retention struct {
	Mode  string `xml:"Mode"`
	Until string `xml:"RetainUntilDate"`
}

// Retention: the lock of one version, from GetObjectRetention; from a HEAD of the version where
// the server has no GetObjectRetention (moto answers the object's bytes): S3 says the lock in a
// HEAD's x-amz-object-lock-mode and x-amz-object-lock-retain-until-date headers too.
func (c *Client) Retention(ctx context.Context, v ObjVersion) (retention, error) {
	query := map[string]string{"retention": ""}
	version := map[string]string{}
	if v.VersionId != "" {
		query["versionId"] = v.VersionId
		version["versionId"] = v.VersionId
	}
	var parsed retention
	_, body, err := c.Simple(ctx, http.MethodGet, v.Key, query, nil, nil)
	if err == nil && xml.Unmarshal(body, &parsed) == nil && parsed.Mode != "" {
		return parsed, nil
	}
	status, _, header, headErr := c.Exchange(ctx, http.MethodHead, v.Key, version, nil, nil)
	if headErr == nil && status < 300 && header.Get("X-Amz-Object-Lock-Mode") != "" {
		return retention{Mode: header.Get("X-Amz-Object-Lock-Mode"),
			Until: header.Get("X-Amz-Object-Lock-Retain-Until-Date")}, nil
	}
	if err == nil {
		err = &OpError{Kind: "protocol", Message: "no retention in the answers to GET ?retention and HEAD"}
	}
	return parsed, err
}

type versionList struct {
	IsTruncated         bool   `xml:"IsTruncated"`
	NextKeyMarker       string `xml:"NextKeyMarker"`
	NextVersionIdMarker string `xml:"NextVersionIdMarker"`
	Versions            []struct {
		Key       string `xml:"Key"`
		VersionId string `xml:"VersionId"`
	} `xml:"Version"`
	Markers []struct {
		Key       string `xml:"Key"`
		VersionId string `xml:"VersionId"`
	} `xml:"DeleteMarker"`
}

// ListVersions: one page of versions and delete markers under prefix.
func (c *Client) ListVersions(ctx context.Context, prefix, keyMarker, versionMarker string) (*versionList, error) {
	query := map[string]string{"versions": "", "prefix": prefix, "max-keys": "1000"}
	if keyMarker != "" {
		query["key-marker"] = keyMarker
		query["version-id-marker"] = versionMarker
	}
	_, body, err := c.Simple(ctx, http.MethodGet, "", query, nil, nil)
	if err != nil {
		return nil, err
	}
	var parsed versionList
	if err := xml.Unmarshal(body, &parsed); err != nil {
		return nil, &OpError{Kind: "protocol", Message: "cannot parse the version listing: " + err.Error()}
	}
	return &parsed, nil
}

func (l *versionList) mine(prefix string, skip map[ObjVersion]bool) []ObjVersion {
	var out []ObjVersion
	add := func(key, version string) {
		v := ObjVersion{Key: key, VersionId: version}
		if strings.HasPrefix(key, prefix) && len(key) > len(prefix) && !skip[v] {
			out = append(out, v)
		}
	}
	for _, v := range l.Versions {
		add(v.Key, v.VersionId)
	}
	for _, m := range l.Markers {
		add(m.Key, m.VersionId)
	}
	return out
}

// deleteVersions removes every version and delete marker under the prefix (governance
// bypassed). What compliance retention keeps is listed in the done event with its date.
func deleteVersions(ctx context.Context, cfg *Config, client *Client) error {
	deleted, failed := 0, 0
	held := map[ObjVersion]bool{}
	var retained []map[string]string
	var firstErr error
	for round := 0; round < 3; round++ {
		failed, firstErr = 0, nil
		keyMarker, versionMarker := "", ""
		for {
			page, err := client.ListVersions(ctx, cfg.Prefix, keyMarker, versionMarker)
			if err != nil {
				return err
			}
			if mine := page.mine(cfg.Prefix, held); len(mine) > 0 {
				failures, err := client.DeleteKeys(ctx, mine, true)
				deleted += len(mine) - len(failures)
				for _, v := range failures {
					if r, rerr := client.Retention(ctx, v); rerr == nil && r.Mode == "COMPLIANCE" && later(r.Until) {
						held[v] = true
						retained = append(retained, map[string]string{"key": v.Key, "version": v.VersionId, "until": r.Until})
						continue
					}
					failed++
					if firstErr == nil {
						firstErr = err
					}
				}
			}
			if !page.IsTruncated {
				break
			}
			keyMarker, versionMarker = page.NextKeyMarker, page.NextVersionIdMarker
		}
		if failed == 0 {
			break
		}
	}
	aborted, err := abortUploads(ctx, cfg, client)
	if err != nil {
		return err
	}
	if failed > 0 && firstErr != nil {
		return firstErr
	}
	emit(map[string]any{"event": "done", "deleted": deleted, "failed": failed, "left": failed,
		"retained": retained, "aborted": aborted})
	return nil
}

func later(stamp string) bool {
	until, err := time.Parse(time.RFC3339, stamp)
	return err == nil && until.After(time.Now())
}

type uploadList struct {
	IsTruncated        bool   `xml:"IsTruncated"`
	NextKeyMarker      string `xml:"NextKeyMarker"`
	NextUploadIdMarker string `xml:"NextUploadIdMarker"`
	Uploads            []struct {
		Key      string `xml:"Key"`
		UploadId string `xml:"UploadId"`
	} `xml:"Upload"`
}

// abortUploads ends the multipart uploads under the prefix that never completed (an
// interrupted or failed run): their parts use space but are no object.
func abortUploads(ctx context.Context, cfg *Config, client *Client) (int, error) {
	aborted := 0
	for pages := 0; pages < 1000; pages++ {
		_, body, err := client.Simple(ctx, http.MethodGet, "", map[string]string{"uploads": "", "prefix": cfg.Prefix}, nil, nil)
		if err != nil {
			return aborted, err
		}
		var parsed uploadList
		if err := xml.Unmarshal(body, &parsed); err != nil {
			return aborted, &OpError{Kind: "protocol", Message: "cannot parse the upload listing: " + err.Error()}
		}
		if len(parsed.Uploads) == 0 {
			return aborted, nil
		}
		for _, u := range parsed.Uploads {
			if !strings.HasPrefix(u.Key, cfg.Prefix) {
				continue
			}
			if err := client.AbortUpload(ctx, u.Key, u.UploadId); err != nil {
				return aborted, err
			}
			aborted++
		}
	}
	return aborted, fmt.Errorf("too many multipart uploads under %s", cfg.Prefix)
}

// lockCheck tries, on each object named, what a ransomware attack on a backup would.
func lockCheck(ctx context.Context, cfg *Config, client *Client) error {
	content := &Content{Kind: "incompressible", Seed: cfg.Seed ^ 0x10c4}
	checked, applied, deleteRefused, overwriteKept := 0, 0, 0, 0
	var notes []string
	for _, key := range cfg.Keys {
		name := keyName(cfg.Prefix, key)
		_, _, header, err := client.Exchange(ctx, http.MethodHead, name, nil, nil, nil)
		if err != nil {
			return err
		}
		checked++
		version := header.Get("X-Amz-Version-Id")
		if strings.EqualFold(header.Get("X-Amz-Object-Lock-Mode"), cfg.LockMode) {
			applied++
		} else {
			notes = append(notes, name+": no "+cfg.LockMode+" lock on the object")
		}
		original := ObjVersion{Key: name, VersionId: version}
		status, _, _, _ := client.Exchange(ctx, http.MethodDelete, name, map[string]string{"versionId": version}, nil, nil)
		if status >= 300 {
			deleteRefused++
		} else {
			notes = append(notes, name+": DELETE of the version was allowed")
		}
		// What an attacker writes over a backup: other bytes, of any size.
		small := Shape{Size: 4096, Data: uint64(key), Unique: true}
		data, _ := io.ReadAll(content.Body(key, small, 0, small.Size, uint64(time.Now().UnixNano())))
		if status, _, _, err := client.Exchange(ctx, http.MethodPut, name, nil, data, nil); err != nil || status >= 300 {
			notes = append(notes, fmt.Sprintf("%s: the overwrite was refused (%v)", name, err))
		}
		status, _, _, _ = client.Exchange(ctx, http.MethodDelete, name, map[string]string{"versionId": version}, nil, nil)
		got, _, _, _ := client.Exchange(ctx, http.MethodHead, name, map[string]string{"versionId": original.VersionId}, nil, nil)
		if status >= 300 && got == 200 {
			overwriteKept++
		} else {
			notes = append(notes, name+": the original version did not survive an overwrite and its DELETE")
		}
	}
	emit(map[string]any{"event": "done", "checked": checked, "lock_applied": applied,
		"delete_refused": deleteRefused, "overwrite_kept": overwriteKept, "notes": notes})
	return nil
}
